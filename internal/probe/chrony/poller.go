package chrony

import (
	"context"
	"errors"
	"log/slog"
	"net"
	"os"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"time"

	"github.com/clockwatch/clockwatch/internal/loop"
	"github.com/clockwatch/clockwatch/internal/timesource"
)

// Snapshot is the poller's last result: what the exporter and the stepdown
// triggers read. It is a value; its slices are never modified after it is
// published.
type Snapshot struct {
	// Data is the last successful poll's data; zero before the first.
	Data Data
	// HaveData reports whether any poll has succeeded yet.
	HaveData bool
	// Answered is set once chronyd has answered with figures that mean
	// nothing (timesource.ErrFigure) or a reply that does not decode: it
	// is there, and failing, not absent (else a chronyd that never sends
	// a valid figure would count as not running and the start say ok).
	Answered bool
	// Tally counts the polls: Up, Err (why the last failed), LastSuccess
	// (with a monotonic reading: use time.Since), PollDuration, Polls and
	// Failures.
	loop.Tally
	// Warning is why the connection is limited though it works (UDP
	// because chronyd's socket cannot be used), or nil.
	Warning error
	// Transport and Address say how chronyd was reached last.
	Transport Transport
	Address   string
	// LastAttempt is when the last poll finished.
	LastAttempt time.Time
	// Audit is the last audit of chrony.conf; nil when it is off or has not
	// run. AuditErr is why it failed.
	Audit    *Audit
	AuditErr error
}

// Age returns how old the data is at now: the time since the last
// successful poll, or -1 when there was none.
func (s Snapshot) Age(now time.Time) time.Duration {
	if !s.HaveData {
		return -1
	}
	return now.Sub(s.LastSuccess)
}

// auditInterval is how often chrony.conf is audited again.
const auditInterval = time.Minute

// Poller polls chronyd and keeps the last snapshot. It is a task: Run it
// under the daemon's errgroup. It polls as often as chronyd's data changes:
// just after chronyd's next clock update is due (its tracking report says
// when it last updated and how long the last interval was), within
// [PollInterval, MaxPollInterval], or [PollInterval,
// WatchedMaxPollInterval] while it waits on chronyd's process for its exit
// (PIDFile); at once after Wake (a clock set) and after chronyd's exit;
// and backing off to MaxPollInterval while chronyd does not answer.
type Poller struct {
	cfg    Config
	client *Client
	logger *slog.Logger
	audit  func(path string) (*Audit, error)
	wake   chan struct{}
	polled loop.Signal

	mu   sync.RWMutex
	snap Snapshot
	// logged is what the poller last said in its log, so that a lasting
	// failure is logged once, and again only for a reason not yet logged
	// while it lasts (in auto mode the address alternates, and with it the
	// wording, not the reason).
	logged     string
	loggedDown map[string]bool
	// overdue counts polls since chronyd's update was due without a new
	// one, for the back-off.
	overdue int
	lastRef time.Time
	// failStreak counts the failed polls since the last good one.
	failStreak int
	// watch waits for chronyd's exit (Run's alone); watching says it is
	// set, for next and maxAge. watchErr is why the last try failed, to
	// log each reason once.
	watch    *exitWatch
	watching atomic.Bool
	watchErr string
}

// NewPoller returns a poller for the configured chronyd. Source names come
// from reverse DNS only when cfg.DNSLookups is set.
func NewPoller(cfg Config, logger *slog.Logger) *Poller {
	var r Resolver
	if cfg.DNSLookups {
		r = net.DefaultResolver
	}
	return newPoller(cfg, NewClient(cfg, r), logger)
}

func newPoller(cfg Config, c *Client, logger *slog.Logger) *Poller {
	if logger == nil {
		logger = slog.New(slog.DiscardHandler)
	}
	return &Poller{cfg: cfg, client: c, logger: logger, audit: AuditFile, wake: make(chan struct{}, 1)}
}

// Snapshot returns the last result. It never waits on chronyd.
func (p *Poller) Snapshot() Snapshot {
	p.mu.RLock()
	defer p.mu.RUnlock()
	return p.snap
}

// SourceDetails reports whether chrony.source_details asks for every
// per-source figure (the exporter reads it).
func (p *Poller) SourceDetails() bool { return p.cfg.SourceDetails }

// Polled fires after each poll has published its snapshot: a consumer that
// reads Reading when it fires, rather than on a ticker of its own, sees
// every new figure at once and wakes only as often as chronyd's data
// changes.
func (p *Poller) Polled() *loop.Signal { return &p.polled }

// Wake makes Run poll now (the clock was set: chronyd's figures change at
// once). It never blocks.
func (p *Poller) Wake() {
	select {
	case p.wake <- struct{}{}:
	default:
	}
}

// Run polls until ctx is done, then closes the connection (removing the
// reply socket). It returns nil on cancellation: chronyd being away is a
// state to report, not a reason to stop the daemon.
func (p *Poller) Run(ctx context.Context) error {
	defer p.client.Close()
	var lastAudit time.Time
	loop.NextOrWake(ctx, p.wake, func(ctx context.Context) time.Duration {
		if p.cfg.ConfPath != "" && (lastAudit.IsZero() || time.Since(lastAudit) >= auditInterval) {
			p.runAudit()
			lastAudit = time.Now()
		}
		p.Poll(ctx)
		p.rewatch()
		return p.next(time.Now())
	})
	if p.watch != nil {
		p.watch.Close()
	}
	return nil
}

// rewatch keeps a watch on chronyd's exit while it answers: started after
// a good poll (again after chronyd restarted), stopped while it does not
// answer (the back-off's polls look for it then). The exit wakes Run, so a
// chronyd that stops is noticed at once whatever the wait between polls.
func (p *Poller) rewatch() {
	if p.watch != nil {
		select {
		case <-p.watch.Done():
			p.watch = nil // exited: the poll it woke has just run
		default:
		}
	}
	up := p.Snapshot().Up
	switch {
	case !up && p.watch != nil:
		p.watch.Close()
		p.watch = nil
	case up && p.watch == nil && p.cfg.PIDFile != "" && p.cfg.local():
		w, err := watchExit(p.cfg.PIDFile, p.Wake)
		if err != nil {
			if why := reason(err); why != p.watchErr {
				p.watchErr = why
				p.logger.Info("not watching chronyd's process; a chronyd that exits is noticed at the next poll, at most chrony.max_poll_interval apart",
					"pid_file", p.cfg.PIDFile, "err", err)
			}
			break
		}
		p.watch, p.watchErr = w, ""
		p.logger.Debug("watching chronyd's process for its exit", "pid", w.pid, "pid_file", p.cfg.PIDFile)
	}
	p.watching.Store(p.watch != nil)
}

// longest is the longest wait between two polls while chronyd answers:
// chrony.watched_max_poll_interval while its exit is watched, else
// chrony.max_poll_interval.
func (p *Poller) longest() time.Duration {
	if p.watching.Load() {
		return max(p.cfg.WatchedMaxPollInterval, p.cfg.MaxPollInterval)
	}
	return p.cfg.MaxPollInterval
}

// updateMargin is how long after chronyd's next update is due the poller
// polls: chronyd updates when a source's reply arrives, a little after its
// poll.
const updateMargin = 250 * time.Millisecond

// next is the wait before the next poll, from the last snapshot.
func (p *Poller) next(now time.Time) time.Duration {
	lo, hi := p.cfg.PollInterval, p.cfg.MaxPollInterval
	if hi <= lo {
		return lo
	}
	s := p.Snapshot()
	if !s.Up {
		// chronyd does not answer: 1, 2, 4, ... PollInterval, up to
		// max_poll_interval. It is logged and exported as down meanwhile.
		return loop.Backoff(lo, hi, p.failStreak)
	}
	hi = p.longest()
	t := s.Data.Tracking
	if !t.RefTime.Equal(p.lastRef) {
		p.lastRef, p.overdue = t.RefTime, 0
	}
	if t.RefTime.IsZero() || t.UpdateInterval <= 0 {
		return lo // chronyd has not updated the clock yet: it will soon
	}
	due := t.RefTime.Add(time.Duration(t.UpdateInterval*float64(time.Second)) + updateMargin)
	if d := due.Sub(now); d > 0 {
		return min(max(d, lo), hi)
	}
	// The update is late (a source stopped answering, or chronyd's polls
	// grew): look again sooner than the longest, later each time.
	p.overdue++
	return loop.Backoff(lo, hi, p.overdue)
}
func (p *Poller) runAudit() {
	a, err := p.audit(p.cfg.ConfPath)
	p.mu.Lock()
	p.snap.Audit, p.snap.AuditErr = a, err
	p.mu.Unlock()
	if err != nil {
		p.logger.Warn("cannot audit chrony's configuration", "path", p.cfg.ConfPath, "err", err)
	}
}

// pollDeadline bounds a whole poll (tracking, then two requests per
// source, and reverse DNS when asked for): the longest wait between polls.
func (p *Poller) pollDeadline() time.Duration { return max(p.cfg.PollInterval, p.cfg.MaxPollInterval) }

// maxAge is how old a good reading may be: the longest wait between polls
// while chronyd answers, then a poll that may take up to its deadline.
func (p *Poller) maxAge() time.Duration {
	return max(p.longest(), p.cfg.PollInterval) + p.pollDeadline() + timesource.StaleGrace
}

// Poll polls chronyd once and publishes the result. Run calls it on every
// tick; tests call it directly.
func (p *Poller) Poll(ctx context.Context) {
	start := time.Now()
	ctx, cancel := context.WithTimeout(ctx, p.pollDeadline())
	d, err := p.client.Poll(ctx)
	dialed := p.client.Dialed()
	cancel()
	end := time.Now()
	tr, addr := p.client.Transport()
	warn := p.client.Warning()

	p.mu.Lock()
	s := p.snap
	if err != nil && !s.HaveData {
		err = p.cfg.Absence(err)
	}
	wasUp := s.Count(start, end, err)
	s.LastAttempt = end
	s.Transport, s.Address = tr, addr
	s.Warning = nil
	if err != nil {
		p.failStreak++
		s.Answered = s.Answered || (dialed && answered(err))
	} else {
		s.Data, s.HaveData = d, true
		p.failStreak = 0
		s.Warning = warn
	}
	p.snap = s
	p.mu.Unlock()
	p.polled.Notify()

	// One line when the state changes, and one more for every reason not
	// yet logged while the failure (or the limit) lasts.
	msg, why := "", ""
	switch {
	case err != nil:
		msg, why = err.Error(), reason(err)
	case warn != nil:
		msg, why = warn.Error(), reason(warn)
	}
	changed := (err == nil) != wasUp || (msg == "") != (p.logged == "")
	if changed {
		p.loggedDown = nil
	}
	if why != "" && !p.loggedDown[why] {
		if p.loggedDown == nil {
			p.loggedDown = make(map[string]bool)
		}
		p.loggedDown[why] = true
		changed = true
	}
	if !changed {
		return
	}
	switch {
	case errors.Is(err, timesource.ErrAbsent):
		// A host that runs ntpd or timesyncd, or no time daemon (the
		// daemon's undisciplined warning says so): nothing is wrong with
		// chronyd.
		p.logger.Info("chronyd is not running here; it is read as soon as it starts", "err", err)
	case err != nil:
		p.logger.Error("cannot read chronyd", "err", err)
	case warn != nil:
		p.logger.Warn("reading chronyd with limits", "transport", tr, "address", addr, "err", warn)
	case p.logged != "":
		p.logger.Info("chronyd answers again", "transport", tr, "address", addr)
	}
	p.logged = msg
}

// answered reports whether a failed poll's error says chronyd answered:
// with figures that mean nothing, or with a reply that does not decode. A
// timeout or a system call's error says nothing answered.
func answered(err error) bool {
	var ne net.Error
	var errno syscall.Errno
	switch {
	case errors.Is(err, timesource.ErrFigure):
		return true
	case errors.As(err, &ne) && ne.Timeout(), errors.As(err, &errno), errors.Is(err, os.ErrNotExist):
		return false
	}
	return true
}

// reason is what a failure's log line is keyed on: the innermost causes of
// err (a system call's errno, a timeout, chronyd's status), not the wording
// around them, which names the address tried and the ephemeral port.
func reason(err error) string {
	if j, ok := err.(interface{ Unwrap() []error }); ok {
		var rs []string
		for _, e := range j.Unwrap() {
			rs = append(rs, reason(e))
		}
		return strings.Join(rs, "; ")
	}
	var errno syscall.Errno
	var ne net.Error
	switch {
	case errors.As(err, &errno):
		return errno.Error()
	case errors.As(err, &ne) && ne.Timeout():
		return "timeout"
	}
	if u := errors.Unwrap(err); u != nil {
		return reason(u)
	}
	return err.Error()
}
