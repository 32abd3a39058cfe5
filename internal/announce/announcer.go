package announce

import (
	"errors"
	"fmt"
	"log/slog"
	"reflect"
	"sync"
	"time"

	"github.com/clockwatch/clockwatch/internal/stepdown/policy"
	"github.com/clockwatch/clockwatch/internal/timesource"
	"github.com/clockwatch/clockwatch/stepdown"
)

// sentRing is how many recent announcements remember when they were made,
// for the socket's ack latency.
const sentRing = 64

// Announcement is one event as every transport announces it: the policy's
// event and its wire message, numbered.
type Announcement struct {
	Event   policy.Event
	Message stepdown.Message
}

// Seq is the announcement's sequence number (0 for none).
func (a Announcement) Seq() uint64 { return a.Message.Seq }

// Snapshot is the announcer's state at one instant: what a transport tells
// whoever asks now (a socket client's hello, a node condition).
type Snapshot struct {
	policy.Status
	// Seq is the sequence number of the last announcement (0: none yet).
	Seq uint64
	// Starting is set while the state waits for a source's first report.
	Starting bool
	// Last is the announcement that brought the state where it is (zero
	// before the first): its reason, source, detail and time.
	Last Announcement
	// For is how long the state has been what it is: since the
	// announcement that changed it, or since the start (unknown, or the
	// state a restart carried over).
	For time.Duration
}

// Options are an Announcer's inputs besides the policy's configuration.
type Options struct {
	// Logger receives one line per announcement; nil discards them.
	Logger *slog.Logger
	// Epoch is the clock epoch at start, persisted by the step detector.
	Epoch uint64
	// Mono returns CLOCK_MONOTONIC; nil reads the real one. It must be the
	// clock of policy.Step.Mono. With a clock of its own (a test's fake)
	// the announcer sets no timer for the policy's deadlines: the caller
	// ticks it (Tick, the socket's heartbeat), as a real timer cannot
	// follow a fake clock.
	Mono func() time.Duration
	// Await names the sources (time sources, "clocks") whose first report
	// the state waits for before it leaves unknown; empty: the first
	// report of any.
	Await []string
	// StatePath, when set, is where the policy's state is kept so that a
	// restart in the same boot carries on its stepdown and hold-down
	// (StateFile in the state directory).
	StatePath string
	// Boot names the boot and converts to BOOTTIME for StatePath; nil
	// reads the real ones.
	Boot Boot
}

// Announcer decides what to announce and numbers it: it runs the policy,
// gives each event its sequence number, counts it in
// clockwatch_stepdown_events_total, keeps the policy's state in StatePath,
// and hands every announcement to its transports. It knows nothing of
// sockets, segments or clusters. It is safe for concurrent use.
type Announcer struct {
	log  *slog.Logger
	mono func() time.Duration
	met  *metrics

	mu   sync.Mutex
	pol  *policy.Policy
	seq  uint64
	last Announcement
	// stateAt is when the state last changed (its first announcement),
	// or when the announcer was made.
	stateAt time.Duration
	sentAt  [sentRing]struct {
		seq uint64
		at  time.Duration
	}
	// inline are the attached transports, called in sequence order with
	// mu held; nextID names the next one.
	inline map[uint64]func(Announcement)
	order  []uint64
	nextID uint64
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

// New returns an announcer in state unknown, or in the state a process
// before it left in this boot (StatePath).
func New(cfg policy.Config, o Options) *Announcer {
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
		log: o.Logger.With("component", "stepdown"), mono: o.Mono, pol: policy.New(cfg, o.Epoch),
		statePath: o.StatePath, boot: o.Boot, timed: timed, inline: map[uint64]func(Announcement){},
		stateAt: o.Mono(),
	}
	a.met = newMetrics(a)
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
// more (inputs still are). The daemon closes it when its feed stops.
func (a *Announcer) Close() {
	a.mu.Lock()
	defer a.mu.Unlock()
	a.closed = true
	a.armLocked()
}

// Attach makes f receive every announcement from now on, in sequence order,
// in line: f runs with the announcer locked, so it must not block (queue
// and return) and must not call back into the announcer. It is for a
// transport whose delivery is itself a non-blocking hand-off to queues of
// its own (the socket's fan-out), for which the latency of a goroutine
// switch matters; every other transport takes a Subscription. detach ends
// the attachment.
func (a *Announcer) Attach(f func(Announcement)) (detach func()) {
	a.mu.Lock()
	defer a.mu.Unlock()
	id := a.nextID
	a.nextID++
	a.inline[id] = f
	a.order = append(a.order, id)
	return func() {
		a.mu.Lock()
		defer a.mu.Unlock()
		if _, ok := a.inline[id]; !ok {
			return
		}
		delete(a.inline, id)
		for i, o := range a.order {
			if o == id {
				a.order = append(a.order[:i], a.order[i+1:]...)
				break
			}
		}
	}
}

// Current runs f with a snapshot of the state, with the announcer locked: a
// transport registers a new client and greets it in f, so that the client
// misses no announcement made after its greeting and gets none twice.
func (a *Announcer) Current(f func(Snapshot)) {
	a.mu.Lock()
	defer a.mu.Unlock()
	f(a.snapshotLocked())
}

// Latest is a snapshot of the state now.
func (a *Announcer) Latest() Snapshot {
	a.mu.Lock()
	defer a.mu.Unlock()
	return a.snapshotLocked()
}

func (a *Announcer) snapshotLocked() Snapshot {
	return Snapshot{Status: a.pol.Status(), Seq: a.seq, Starting: !a.pol.Started(), Last: a.last, For: a.mono() - a.stateAt}
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

// input runs f on the policy and announces what it returns.
func (a *Announcer) input(f func(p *policy.Policy, now time.Duration) []policy.Event) {
	a.mu.Lock()
	defer a.mu.Unlock()
	a.publishLocked(f(a.pol, a.mono()))
	a.persistLocked()
	a.armLocked()
}

// Step feeds a step from the step detector. A zero Mono means now. It
// returns once every attached transport has the stepdown (the socket's
// clients whose buffers had room have it written).
func (a *Announcer) Step(st policy.Step) {
	a.input(func(p *policy.Policy, now time.Duration) []policy.Event {
		if st.Mono == 0 {
			st.Mono = now
		}
		return p.Step(st)
	})
}

// Readings feeds one poll of every time source (see policy.Readings).
func (a *Announcer) Readings(set timesource.Set) {
	a.input(func(p *policy.Policy, now time.Duration) []policy.Event { return p.Readings(set, now) })
}

// Reading feeds one reading of one time source.
func (a *Announcer) Reading(r timesource.Reading) {
	a.input(func(p *policy.Policy, now time.Duration) []policy.Event { return p.Reading(r, now) })
}

// ProbeOK reports a good report from the named input (a source, the
// clocks, the journal).
func (a *Announcer) ProbeOK(name string) {
	a.input(func(p *policy.Policy, now time.Duration) []policy.Event { return p.ProbeOK(name, now) })
}

// ProbeFailed reports a failure of the named input.
func (a *Announcer) ProbeFailed(name string, err error) {
	a.input(func(p *policy.Policy, now time.Duration) []policy.Event { return p.ProbeFailed(name, err, now) })
}

// Woke feeds a wake-up from suspend (the detector's step.TypeWake): the
// machine was suspended for d.
func (a *Announcer) Woke(d time.Duration) {
	a.input(func(p *policy.Policy, now time.Duration) []policy.Event { return p.Woke(d, now) })
}

// Tick advances the policy's time and announces what it returns, then runs
// after (a heartbeat) with a snapshot, still locked.
func (a *Announcer) Tick(after func(Snapshot)) {
	a.mu.Lock()
	defer a.mu.Unlock()
	a.publishLocked(a.pol.Tick(a.mono()))
	a.persistLocked()
	a.armLocked()
	if after != nil {
		after(a.snapshotLocked())
	}
}

// ErrBusy is wrapped by Drill when the state is not ok.
var ErrBusy = errors.New("stepdown state is not ok")

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

// SentAt returns when the announcement with seq was made, if it is recent
// enough to be remembered, whether seq was ever announced, and now.
func (a *Announcer) SentAt(seq uint64) (at time.Duration, remembered, announced bool, now time.Duration) {
	a.mu.Lock()
	defer a.mu.Unlock()
	rec := a.sentAt[seq%sentRing]
	return rec.at, rec.seq == seq, seq > 0 && seq <= a.seq, a.mono()
}

// publishLocked numbers events and hands them to every transport.
func (a *Announcer) publishLocked(evs []policy.Event) {
	for _, e := range evs {
		a.seq++
		a.sentAt[a.seq%sentRing] = struct {
			seq uint64
			at  time.Duration
		}{a.seq, a.mono()}
		an := Announcement{Event: e, Message: e.Message(a.seq)}
		if e.State != a.last.Event.State {
			a.stateAt = a.sentAt[a.seq%sentRing].at
		}
		a.last = an
		a.met.count(e)
		a.log.Info("stepdown event", "type", e.Type, "reason", e.Reason, "source", e.Source, "seq", a.seq, "epoch", e.Epoch,
			"drill", e.Drill, "detail", e.Detail)
		for _, id := range a.order {
			a.inline[id](an)
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
