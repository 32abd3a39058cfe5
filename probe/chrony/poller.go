package chrony

import (
	"context"
	"log/slog"
	"net"
	"sync"
	"time"
)

// Snapshot is the poller's last result: what the exporter and the stepdown
// triggers read. It is a value; its slices are never modified after it is
// published.
type Snapshot struct {
	// Data is the last successful poll's data; zero before the first.
	Data Data
	// HaveData reports whether any poll has succeeded yet.
	HaveData bool
	// Up reports whether the last poll succeeded.
	Up bool
	// Err is why the last poll failed, nil when it succeeded.
	Err error
	// Warning is why the connection is limited though it works (UDP
	// because chronyd's socket cannot be used), or nil.
	Warning error
	// Transport and Address say how chronyd was reached last.
	Transport Transport
	Address   string
	// LastAttempt and LastSuccess are when the last poll and the last
	// successful one finished (with a monotonic reading: use time.Since).
	LastAttempt, LastSuccess time.Time
	// PollDuration is how long the last poll took.
	PollDuration time.Duration
	// Polls and Failures count polls since the start.
	Polls, Failures uint64
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

// Status is what the stepdown triggers need from chronyd, taken from the
// last successful poll.
type Status struct {
	// Valid is false until a poll has succeeded; the other fields are then
	// zero.
	Valid bool
	// Up reports whether the last poll succeeded (Valid with Up false: the
	// figures are from LastSuccess and growing stale).
	Up bool
	// Err is why the last poll failed, nil when it succeeded.
	Err error
	// SystemOffset is the local clock minus true time in seconds, as
	// chronyd estimates it (positive: the clock is ahead).
	SystemOffset float64
	// Leap is chronyd's leap status.
	Leap Leap
	// Synchronised reports whether chronyd is synchronised.
	Synchronised bool
	// ErrorBound is |SystemOffset| + root dispersion + root delay / 2, in
	// seconds.
	ErrorBound float64
	// LastSuccess is when these figures were read (monotonic reading
	// included).
	LastSuccess time.Time
}

// Status returns the stepdown view of the snapshot.
func (s Snapshot) Status() Status {
	if !s.HaveData {
		return Status{Err: s.Err}
	}
	t := s.Data.Tracking
	return Status{
		Valid:        true,
		Up:           s.Up,
		Err:          s.Err,
		SystemOffset: t.SystemOffset,
		Leap:         t.Leap,
		Synchronised: t.Synchronised(),
		ErrorBound:   t.ErrorBound(),
		LastSuccess:  s.LastSuccess,
	}
}

// auditInterval is how often chrony.conf is audited again.
const auditInterval = time.Minute

// Poller polls chronyd on its own interval and keeps the last snapshot. It
// is a task: Run it under the daemon's errgroup.
type Poller struct {
	cfg    Config
	client *Client
	logger *slog.Logger
	audit  func(path string) (*Audit, error)

	mu   sync.RWMutex
	snap Snapshot
	// logged is the state last logged, so that a lasting failure is
	// logged once, not every second.
	logged logState
}

// logState is what the poller last said in its log.
type logState struct {
	text string
	at   time.Time
}

// relogInterval is how long a failure that changes its wording stays quiet.
const relogInterval = time.Minute

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
	return &Poller{cfg: cfg, client: c, logger: logger, audit: AuditFile}
}

// Snapshot returns the last result. It never waits on chronyd.
func (p *Poller) Snapshot() Snapshot {
	p.mu.RLock()
	defer p.mu.RUnlock()
	return p.snap
}

// Status returns what the stepdown triggers need, from the last result.
func (p *Poller) Status() Status { return p.Snapshot().Status() }

// Run polls until ctx is done, then closes the connection (removing the
// reply socket). It returns nil on cancellation: chronyd being away is a
// state to report, not a reason to stop the daemon.
func (p *Poller) Run(ctx context.Context) error {
	defer p.client.Close()
	t := time.NewTicker(p.cfg.PollInterval)
	defer t.Stop()
	var lastAudit time.Time
	for {
		if p.cfg.ConfPath != "" && (lastAudit.IsZero() || time.Since(lastAudit) >= auditInterval) {
			p.runAudit()
			lastAudit = time.Now()
		}
		p.Poll(ctx)
		select {
		case <-ctx.Done():
			return nil
		case <-t.C:
		}
	}
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

// Poll polls chronyd once and publishes the result. Run calls it on every
// tick; tests call it directly.
func (p *Poller) Poll(ctx context.Context) {
	start := time.Now()
	d, err := p.client.Poll(ctx)
	end := time.Now()
	tr, addr := p.client.Transport()
	warn := p.client.Warning()

	p.mu.Lock()
	s := p.snap
	s.Polls++
	s.LastAttempt = end
	s.PollDuration = end.Sub(start)
	s.Transport, s.Address = tr, addr
	s.Err, s.Warning = err, nil
	wasUp := s.Up || s.Polls == 1
	s.Up = err == nil
	if err != nil {
		s.Failures++
	} else {
		s.Data, s.HaveData, s.LastSuccess = d, true, end
		s.Warning = warn
	}
	p.snap = s
	p.mu.Unlock()

	// One line when the state changes, and not more than once a minute
	// while a failure lasts with changing words.
	msg := ""
	switch {
	case err != nil:
		msg = err.Error()
	case warn != nil:
		msg = warn.Error()
	}
	changed := (err == nil) != wasUp || (msg != "" && msg != p.logged.text && time.Since(p.logged.at) >= relogInterval)
	if p.logged.text == "" && msg != "" {
		changed = true
	}
	if !changed {
		return
	}
	switch {
	case err != nil:
		p.logger.Error("cannot read chronyd", "err", err)
	case warn != nil:
		p.logger.Warn("reading chronyd with limits", "transport", tr, "address", addr, "err", warn)
	case p.logged.text != "":
		p.logger.Info("chronyd answers again", "transport", tr, "address", addr)
	}
	p.logged = logState{text: msg, at: time.Now()}
}
