package timesyncd

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"time"

	"github.com/clockwatch/clockwatch/internal/loop"
	"github.com/clockwatch/clockwatch/internal/timesource"
)

// SourceName is timesyncd's name in readings, metrics and verdicts.
const SourceName = "timesyncd"

// Snapshot is the poller's last result. It is a value.
type Snapshot struct {
	// Props are the properties of the last successful poll; HaveData
	// reports whether that poll saw a reply timesyncd accepted (Props is
	// then meaningful).
	Props    Properties
	HaveData bool
	// Pinned is set in mode on: timesyncd is expected.
	Pinned bool
	// Found reports whether timesyncd has answered in this process (or is
	// pinned: then its absence is reported).
	Found bool
	// SampleSeen is when timesyncd received Props.Message, on this
	// process's monotonic clock: when the poller first saw the message,
	// or, for the message found at the first poll, the age timesyncd's own
	// receive time gives it.
	SampleSeen time.Time
	// Tally counts the polls; its Err wraps ErrAbsent when timesyncd is not
	// on the bus, and its Failures are the polls that failed while
	// timesyncd was found or pinned (an absent timesyncd in mode auto is
	// no failure).
	loop.Tally
}

// Absent reports whether the last poll found no timesyncd on the bus.
func (s Snapshot) Absent() bool { return errors.Is(s.Err, ErrAbsent) }

// SampleAge is the age of the last reply at now; -1 without one.
func (s Snapshot) SampleAge(now time.Time) time.Duration {
	if !s.HaveData {
		return -1
	}
	return max(now.Sub(s.SampleSeen), 0)
}

// Fresh reports whether the last reply is recent enough that timesyncd
// still has its server (see Properties.StaleAfter).
func (s Snapshot) Fresh(now time.Time) bool {
	return s.HaveData && s.SampleAge(now) <= s.Props.StaleAfter()
}

// Synchronized is timesyncd's state as clockwatch judges it: a fresh
// reply from a synchronised server (timesyncd rejects the others, but its
// last accepted one may announce an alarm). It does not depend on Up: one
// lost D-Bus call does not unsynchronise the clock; the growing age does.
func (s Snapshot) Synchronized(now time.Time) bool {
	m := s.Props.Message
	return s.Fresh(now) && m.Leap != 3 && m.Stratum >= 1 && m.Stratum < 16
}

// ErrorBound is the error bound of the last reply at now (NTPMessage.ErrorBound).
func (s Snapshot) ErrorBound(now time.Time) time.Duration {
	return s.Props.Message.ErrorBound(s.SampleAge(now))
}

// Reading is the normalised reading of the snapshot at now.
func (s Snapshot) Reading(now time.Time) timesource.Reading {
	r := s.Tally.Reading(SourceName, timesource.Authoritative, s.Found, s.HaveData, nil)
	r.Detail = s.Detail(now)
	if !s.Found && s.Err != nil {
		// Never found and not expected (mode auto): looked for, not there;
		// nothing to judge, nothing to raise. A bus that does not answer
		// counts the same (Poll logs it at debug level only): on a node
		// kept by chronyd, a slow D-Bus must not make a stepdown.
		r.Err = timesource.Absent(s.Err)
	}
	if !s.HaveData {
		return r
	}
	m := s.Props.Message
	r.Synchronized = s.Synchronized(now)
	r.Offset = m.CurrentOffset()
	r.ErrorBound = s.ErrorBound(now)
	r.Leap = timesource.Leap(m.Leap & 3)
	return r
}

// Detail is the short state for status lines and readings.
func (s Snapshot) Detail(now time.Time) string {
	switch {
	case s.Polls == 0:
		return "not polled yet"
	case s.Absent() && s.HaveData:
		return fmt.Sprintf("gone from the system bus, last reply %s ago", s.SampleAge(now).Round(time.Second))
	case s.Absent():
		return "not on the system bus"
	case !s.Up && !s.HaveData:
		return "unreadable"
	case !s.HaveData:
		if srv := s.Props.Server(); srv != "" {
			return "no reply from " + srv + " yet"
		}
		return "no time server yet"
	}
	srv := s.Props.Server()
	if srv == "" {
		srv = "no server now"
	}
	age := s.SampleAge(now).Round(time.Second)
	if !s.Fresh(now) {
		return fmt.Sprintf("%s, last reply %s ago: lost", srv, age)
	}
	return fmt.Sprintf("%s, stratum %d, last reply %s ago", srv, s.Props.Message.Stratum, age)
}

// Poller reads timesyncd on its own interval and keeps the last result. It
// is a task: Run it under the daemon's errgroup.
type Poller struct {
	cfg    Config
	bus    Bus
	logger *slog.Logger
	now    func() time.Time
	// wallNow is CLOCK_REALTIME for the age of the first message seen.
	wallNow func() time.Time
	snap    loop.Latest[Snapshot]
	// logged is the failure the log last reported ("" none, or answering
	// again since); quiet is the last one logged at debug level only.
	logged, quiet string
}

// NewPoller returns a poller for the configured timesyncd.
func NewPoller(cfg Config, logger *slog.Logger) *Poller {
	return newPoller(cfg, newDBusBus(cfg.Address), logger)
}

func newPoller(cfg Config, b Bus, logger *slog.Logger) *Poller {
	if logger == nil {
		logger = slog.New(slog.DiscardHandler)
	}
	p := &Poller{cfg: cfg, bus: b, logger: logger, now: time.Now, wallNow: func() time.Time { return time.Now().Round(0) }}
	p.snap.Update(func(s *Snapshot) { s.Pinned, s.Found = cfg.Pinned(), cfg.Pinned() })
	return p
}

// Snapshot returns the last result; it never waits on the bus.
func (p *Poller) Snapshot() Snapshot { return p.snap.Load() }

// Reading implements timesource.Source.
//
// A reading older than the poll interval plus the poll's timeout (and
// timesource.StaleGrace) is a failed one: the poll is stuck.
func (p *Poller) Reading() timesource.Reading {
	now := p.now()
	return p.Snapshot().Reading(now).Stale(now, p.cfg.PollInterval+p.cfg.Timeout+timesource.StaleGrace)
}

var _ timesource.Source = (*Poller)(nil)

// Run polls until ctx is done.
func (p *Poller) Run(ctx context.Context) error {
	defer p.bus.Close()
	loop.NextOrWake(ctx, p.bus.Appeared(), func(ctx context.Context) time.Duration {
		p.Poll(ctx)
		return p.nextPoll()
	})
	return nil
}

// nextPoll is the wait before the next poll: longer while "auto" has not
// found timesyncd. One that takes its name meanwhile is polled at once:
// the bus tells (Appeared).
func (p *Poller) nextPoll() time.Duration {
	return loop.Wait(p.Snapshot().Found, p.cfg.PollInterval)
}

// Poll reads timesyncd once and publishes the result.
func (p *Poller) Poll(ctx context.Context) {
	props, start, end, err := loop.Timed(ctx, p.cfg.Timeout, p.now, p.bus.Properties)
	absent := errors.Is(err, ErrAbsent)

	var firstAnswer bool
	s := p.snap.Update(func(snap *Snapshot) {
		firstAnswer = err == nil && snap.LastSuccess.IsZero()
		snap.Found = snap.Found || err == nil || onBus(err)
		if snap.Found {
			snap.Count(start, end, err)
		} else {
			snap.CountAbsent(start, end, err)
		}
		if err == nil {
			last := snap.Props.Message
			snap.Props = props
			valid := props.Message.Valid()
			if valid && (!snap.HaveData || props.Message.PacketCount != last.PacketCount ||
				props.Message.Destination != last.Destination) {
				snap.SampleSeen = p.sampleSeen(props.Message, end, snap.Polls == 1 || !snap.HaveData)
			}
			snap.HaveData = valid
		}
	})

	// One line per change of state. A timesyncd that was never there in
	// mode auto only shows at debug level.
	switch {
	case err == nil && p.logged != "":
		p.logger.Info("timesyncd answers again", "server", props.Server())
		p.logged = ""
	case firstAnswer:
		p.logger.Info("reading systemd-timesyncd over D-Bus", "server", props.Server())
	case err == nil:
	case !s.Found:
		// Never seen and not pinned: timesyncd may well not exist here, and
		// a bus that is slow to answer does not change that.
		if err.Error() != p.quiet {
			p.logger.Debug("no systemd-timesyncd on the system bus", "err", err)
			p.quiet = err.Error()
		}
	case err.Error() != p.logged:
		if absent {
			p.logger.Warn("systemd-timesyncd left the system bus", "err", err)
		} else {
			p.logger.Error("cannot read systemd-timesyncd", "err", err)
		}
		p.logged = err.Error()
	}
}

// sampleSeen is when timesyncd received m. A message that appears while
// the poller watches arrived within the last poll interval: now is close
// enough. One that was there before the poller looked is dated from
// timesyncd's receive time on the wall clock (a step since then skews it;
// the next reply replaces it).
func (p *Poller) sampleSeen(m NTPMessage, now time.Time, first bool) time.Time {
	if !first {
		return now
	}
	age := p.wallNow().Sub(time.UnixMicro(m.Destination))
	return now.Add(-max(age, 0))
}
