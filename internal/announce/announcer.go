package server

import (
	"fmt"
	"log/slog"
	"reflect"
	"sync"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/clockwatch/clockwatch/internal/stepdown/policy"
	"github.com/clockwatch/clockwatch/stepdown"
)

// Announcement is one event as every transport announces it: the policy's
// event and its wire message, numbered.
type Announcement struct {
	Event   policy.Event
	Message stepdown.Message
}

// AnnouncerOptions are an Announcer's inputs besides the policy's
// configuration.
type AnnouncerOptions struct {
	// Logger receives one line per announcement; nil discards them.
	Logger *slog.Logger
	// Epoch is the clock epoch at start, persisted by the step detector.
	Epoch uint64
	// Mono returns CLOCK_MONOTONIC; nil reads the real one. With a clock
	// of its own (a test's fake) the announcer sets no timer for the
	// policy's deadlines: the caller ticks it (Tick, the server's
	// heartbeat), as a real timer cannot follow a fake clock.
	Mono func() time.Duration
	// Await, StatePath and Boot: as in Options.
	Await     []string
	StatePath string
	Boot      Boot
}

// Announcer decides what to announce and numbers it: it runs the policy,
// gives each event its sequence number, counts it in
// clockwatch_stepdown_events_total, keeps the policy's state in StatePath,
// and hands every announcement to its subscribers (the unix socket's
// fan-out, a shared-memory writer, ...). It knows nothing of sockets. It is
// safe for concurrent use.
type Announcer struct {
	log    *slog.Logger
	mono   func() time.Duration
	events *prometheus.CounterVec

	mu     sync.Mutex
	pol    *policy.Policy
	seq    uint64
	sentAt [ackRing]struct {
		seq uint64
		at  time.Duration
	}
	subs []func(Announcement)
	// The policy's state kept across restarts: the path, the last state
	// written, and whether the last write failed (logged once).
	statePath string
	boot      Boot
	saved     policy.Persisted
	saveErr   bool
	// The timer that ticks the policy at its next deadline (a grace
	// period or hold-down expiring, a drill ending) when nothing else
	// does: timed is false with a fake clock; armed is the deadline the
	// timer is set for, while hasArmed; closed stops it for good.
	timed    bool
	timer    *time.Timer
	armed    time.Duration
	hasArmed bool
	closed   bool
}

// minDeadlineWait is the shortest wait the deadline timer is set for, so
// that a deadline that a Tick fails to consume cannot spin.
const minDeadlineWait = time.Millisecond

// NewAnnouncer returns an announcer in state unknown, or in the state a
// process before it left in this boot (StatePath).
func NewAnnouncer(cfg policy.Config, o AnnouncerOptions) *Announcer {
	if o.Logger == nil {
		o.Logger = slog.New(slog.DiscardHandler)
	}
	timed := o.Mono == nil
	if o.Mono == nil {
		o.Mono = monotonic
	}
	if o.Boot == nil {
		o.Boot = sysBoot
	}
	a := &Announcer{
		log: o.Logger, mono: o.Mono, pol: policy.New(cfg, o.Epoch), statePath: o.StatePath, boot: o.Boot, timed: timed,
		events: prometheus.NewCounterVec(prometheus.CounterOpts{Name: MetricEvents,
			Help: "Stepdown and resume events announced, by type and reason (each is sent to every subscriber)."},
			[]string{"type", "reason", "drill"}),
	}
	// Every real trigger's series exists from the start at 0, so that
	// increase() in an alert sees its first event (drills stay lazy).
	for _, r := range stepdown.TriggerReasons() {
		a.events.WithLabelValues(stepdown.TypeStepdown, string(r), "false")
		a.events.WithLabelValues(stepdown.TypeResume, string(r), "false")
	}
	a.events.WithLabelValues(stepdown.TypeResume, string(stepdown.ReasonStarting), "false")
	a.restore()
	a.pol.Await(o.Await...)
	a.armLocked()
	return a
}

// armLocked sets the timer for the policy's next deadline, or stops it when
// none is pending. Called after everything that may move the deadline.
func (a *Announcer) armLocked() {
	if !a.timed {
		return
	}
	d, ok := a.pol.NextDeadline()
	if !ok || a.closed {
		if a.timer != nil {
			a.timer.Stop()
		}
		a.hasArmed = false
		return
	}
	if a.hasArmed && d == a.armed {
		return
	}
	a.armed, a.hasArmed = d, true
	wait := max(d-a.mono(), minDeadlineWait)
	if a.timer == nil {
		a.timer = time.AfterFunc(wait, a.deadline)
		return
	}
	a.timer.Reset(wait)
}

// deadline ticks the policy when its deadline has come.
func (a *Announcer) deadline() {
	a.mu.Lock()
	defer a.mu.Unlock()
	if a.closed {
		return
	}
	a.hasArmed = false
	a.publishLocked(a.pol.Tick(a.mono()))
	a.persistLocked()
	a.armLocked()
}

// Close stops the deadline timer: nothing is announced from a timer any
// more (inputs still are).
func (a *Announcer) Close() {
	a.mu.Lock()
	defer a.mu.Unlock()
	a.closed = true
	a.armLocked()
}

// Subscribe makes f receive every announcement from now on, in sequence
// order. f runs with the announcer locked: it must not block (queue and
// return) and must not call back into the announcer.
func (a *Announcer) Subscribe(f func(Announcement)) {
	a.mu.Lock()
	defer a.mu.Unlock()
	a.subs = append(a.subs, f)
}

// Current runs f with the current state and the seq of the last
// announcement, with the announcer locked: a transport registers a new
// subscriber and greets it in f, so that it misses no announcement made
// after its greeting and gets none twice.
func (a *Announcer) Current(f func(st policy.Status, seq uint64)) {
	a.mu.Lock()
	defer a.mu.Unlock()
	f(a.pol.Status(), a.seq)
}

// Status is the current state.
func (a *Announcer) Status() policy.Status {
	a.mu.Lock()
	defer a.mu.Unlock()
	return a.pol.Status()
}

// Starting reports whether the state still waits for a source's first
// report.
func (a *Announcer) Starting() bool {
	a.mu.Lock()
	defer a.mu.Unlock()
	return !a.pol.Started()
}

// SetConfig applies a reloaded policy configuration.
func (a *Announcer) SetConfig(cfg policy.Config) {
	a.mu.Lock()
	defer a.mu.Unlock()
	a.pol.SetConfig(cfg)
	a.persistLocked()
	a.armLocked()
}

// Input runs f on the policy and announces what it returns.
func (a *Announcer) Input(f func(p *policy.Policy, now time.Duration) []policy.Event) {
	a.mu.Lock()
	defer a.mu.Unlock()
	a.publishLocked(f(a.pol, a.mono()))
	a.persistLocked()
	a.armLocked()
}

// Tick advances the policy's time and announces what it returns, then runs
// after (a heartbeat) with the state and seq, still locked.
func (a *Announcer) Tick(after func(st policy.Status, seq uint64)) {
	a.mu.Lock()
	defer a.mu.Unlock()
	a.publishLocked(a.pol.Tick(a.mono()))
	a.persistLocked()
	a.armLocked()
	if after != nil {
		after(a.pol.Status(), a.seq)
	}
}

// Drill starts a drill; it fails with ErrBusy unless the state is ok.
func (a *Announcer) Drill(reason stepdown.Reason, stepSeconds *float64, hold time.Duration) error {
	a.mu.Lock()
	defer a.mu.Unlock()
	evs, err := a.pol.Drill(reason, stepSeconds, hold, a.mono())
	if err != nil {
		return fmt.Errorf("%w: %w", ErrBusy, err)
	}
	a.publishLocked(evs)
	a.armLocked()
	return nil
}

// SentAt returns when the event with seq was announced, if it is recent
// enough to be remembered, whether seq was ever announced, and now.
func (a *Announcer) SentAt(seq uint64) (at time.Duration, remembered, announced bool, now time.Duration) {
	a.mu.Lock()
	defer a.mu.Unlock()
	rec := a.sentAt[seq%ackRing]
	return rec.at, rec.seq == seq, seq > 0 && seq <= a.seq, a.mono()
}

// publishLocked numbers events and hands them to every subscriber.
func (a *Announcer) publishLocked(evs []policy.Event) {
	for _, e := range evs {
		a.seq++
		a.sentAt[a.seq%ackRing] = struct {
			seq uint64
			at  time.Duration
		}{a.seq, a.mono()}
		an := Announcement{Event: e, Message: e.Message(a.seq)}
		drill := "false"
		if e.Drill {
			drill = "true"
		}
		a.events.WithLabelValues(e.Type, string(e.Reason), drill).Inc()
		a.log.Info("stepdown event", "type", e.Type, "reason", e.Reason, "source", e.Source, "seq", a.seq, "epoch", e.Epoch,
			"drill", e.Drill, "detail", e.Detail)
		for _, f := range a.subs {
			f(an)
		}
	}
}

// restore carries on the state a process before this one left in this boot.
// A state that cannot be read is logged and ignored: the start then waits
// for evidence like any other.
func (a *Announcer) restore() {
	if a.statePath == "" {
		return
	}
	ps, ok, err := loadState(a.statePath, a.boot)
	if err != nil {
		a.log.Warn("cannot restore the stepdown state", "path", a.statePath, "err", err)
		return
	}
	if !ok {
		return
	}
	a.pol.Restore(ps, a.mono())
	a.saved = ps
	if ps.State == stepdown.StateStepdown {
		a.log.Info("stepdown state restored from before the restart", "reason", ps.Reason,
			"conditions", ps.Conditions, "hold_down_left", max(ps.HoldUntil-a.mono(), 0))
	}
}

// persistLocked writes the policy's state when it changed.
func (a *Announcer) persistLocked() {
	if a.statePath == "" {
		return
	}
	ps := a.pol.Persisted()
	if reflect.DeepEqual(ps, a.saved) {
		return
	}
	if err := saveState(a.statePath, ps, a.boot); err != nil {
		if !a.saveErr {
			a.log.Error("cannot persist the stepdown state: a restart will forget the hold-down", "err", err)
		}
		a.saveErr = true
		return
	}
	a.saved, a.saveErr = ps, false
}
