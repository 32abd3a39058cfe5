package announce

import (
	"errors"
	"fmt"
	"log/slog"
	"sync"
	"time"

	"github.com/clockwatch/clockwatch/internal/policy"
	"github.com/clockwatch/clockwatch/internal/timesource"
	"github.com/clockwatch/clockwatch/stepdown"
)

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
	// HoldDown is the policy's hold-down now (stepdown.hold_down): how
	// long the clock must stay healthy before a resume.
	HoldDown time.Duration
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

	// turns hands updates to the transports one at a time, in the order
	// they were made (handOff): no transport runs with mu held, and
	// nobody waits for its turn with mu held, so Latest never waits for
	// a fan-out and a transport may read it.
	turns turns

	mu       sync.Mutex
	pol      *policy.Policy
	holdDown time.Duration
	seq      uint64
	last     Announcement
	// stateAt is when the state last changed (its first announcement),
	// or when the announcer was made.
	stateAt time.Duration
	// subs are the transports' subscriptions, in the order they came
	// (copied on change: a hand-off reads the slice it was given).
	subs []*Subscription
	// told is what the transports were last told of the state besides
	// the announcements: a change of it without one is an update too.
	told told
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
		log: o.Logger.With("component", "stepdown"), mono: o.Mono, pol: policy.New(cfg, o.Epoch), holdDown: cfg.HoldDown,
		statePath: o.StatePath, boot: o.Boot, timed: timed, stateAt: o.Mono(),
	}
	a.turns.cond.L = &a.turns.mu
	a.met = newMetrics(a)
	a.restore()
	a.pol.Await(o.Await...)
	a.armLocked()
	a.told = a.tellLocked()
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
	if a.closed {
		a.mu.Unlock()
		return
	}
	a.hasArmed = false
	ans := a.publishLocked(a.pol.Tick(a.mono()))
	a.armLocked()
	a.deliverLocked(ans)
	a.persist()
}

// Close stops the deadline timer: nothing is announced from a timer any
// more (inputs still are). The daemon closes it when its feed stops.
func (a *Announcer) Close() {
	a.mu.Lock()
	defer a.mu.Unlock()
	a.closed = true
	a.armLocked()
}

// Latest is a snapshot of the state now.
func (a *Announcer) Latest() Snapshot {
	a.mu.Lock()
	defer a.mu.Unlock()
	return a.snapshotLocked()
}

func (a *Announcer) snapshotLocked() Snapshot {
	return Snapshot{Status: a.pol.Status(), Seq: a.seq, Starting: !a.pol.Started(), Last: a.last, For: a.mono() - a.stateAt,
		HoldDown: a.holdDown}
}

// told is the part of a Snapshot that may change without an announcement.
type told struct {
	st       policy.Status
	starting bool
	holdDown time.Duration
}

func (a *Announcer) tellLocked() told {
	return told{st: a.pol.Status(), starting: !a.pol.Started(), holdDown: a.holdDown}
}

// handOff runs deliver in its turn, mu released: called with mu held, it
// returns with it released. The turn is taken under mu, so hand-offs run in
// the order their updates were made, one at a time.
func (a *Announcer) handOff(deliver func()) {
	turn := a.turns.take()
	a.mu.Unlock()
	a.turns.wait(turn)
	defer a.turns.done()
	deliver()
}

// turns is a ticket lock: take (under the announcer's mu) numbers a
// hand-off, wait blocks until every earlier one is done.
type turns struct {
	mu      sync.Mutex
	cond    sync.Cond
	next    uint64 // the next ticket take gives; guarded by the announcer's mu
	serving uint64 // the ticket whose turn it is
}

func (t *turns) take() uint64 {
	n := t.next
	t.next++
	return n
}

func (t *turns) wait(n uint64) {
	t.mu.Lock()
	defer t.mu.Unlock()
	for t.serving != n {
		t.cond.Wait()
	}
}

func (t *turns) done() {
	t.mu.Lock()
	defer t.mu.Unlock()
	t.serving++
	t.cond.Broadcast()
}

// deliverLocked hands the announcements just made, with the state they
// left, to every subscription, and releases mu. A state or hold-down that
// changed without an announcement is an update too; nothing changed is
// none. It logs the announcements after the delivery.
func (a *Announcer) deliverLocked(ans []Announcement) {
	t := a.tellLocked()
	if len(ans) == 0 && t == a.told {
		a.mu.Unlock()
		return
	}
	a.told = t
	u := Update{Announcements: ans, Snapshot: a.snapshotLocked()}
	subs := a.subs
	a.handOff(func() {
		for _, s := range subs {
			s.deliver(u)
		}
	})
	a.logAnnounced(ans)
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
	a.pol.SetConfig(cfg)
	a.holdDown = cfg.HoldDown
	a.persistLocked()
	a.armLocked()
	a.deliverLocked(nil)
}

// input runs f on the policy, announces what it returns, then keeps the
// policy's state: the transports have it before the state file's fsync.
func (a *Announcer) input(f func(p *policy.Policy, now time.Duration) []policy.Event) {
	a.mu.Lock()
	ans := a.publishLocked(f(a.pol, a.mono()))
	a.armLocked()
	a.deliverLocked(ans)
	a.persist()
}

// Step feeds a step from the step detector. A zero Mono means now. It
// returns once every subscription has the stepdown: in line, the socket's
// clients whose buffers had room have it written.
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

// Tick advances the policy's time and announces what it returns. The
// announcer's own timer does so at the policy's deadlines; with a clock of
// its own (Options.Mono) the caller ticks it.
func (a *Announcer) Tick() {
	a.input(func(p *policy.Policy, now time.Duration) []policy.Event { return p.Tick(now) })
}

// ErrBusy is wrapped by Drill when the state is not ok.
var ErrBusy = errors.New("stepdown state is not ok")

// Drill starts a drill; it fails with ErrBusy unless the state is ok.
func (a *Announcer) Drill(reason stepdown.Reason, stepSeconds *float64, hold time.Duration) error {
	a.mu.Lock()
	evs, err := a.pol.Drill(reason, stepSeconds, hold, a.mono())
	if err != nil {
		a.mu.Unlock()
		return fmt.Errorf("%w: %w", ErrBusy, err)
	}
	ans := a.publishLocked(evs)
	a.armLocked()
	a.deliverLocked(ans)
	return nil
}

// publishLocked numbers and counts events, and returns them as
// announcements for deliverLocked (which logs them once delivered).
func (a *Announcer) publishLocked(evs []policy.Event) []Announcement {
	if len(evs) == 0 {
		return nil
	}
	ans := make([]Announcement, 0, len(evs))
	now := a.mono()
	for _, e := range evs {
		a.seq++
		an := Announcement{Event: e, Message: e.Message(a.seq)}
		if e.State != a.last.Event.State {
			a.stateAt = now
		}
		a.last = an
		a.met.count(e)
		ans = append(ans, an)
	}
	return ans
}

// logAnnounced logs announcements once they are delivered, without the
// lock: a log line is formatted and written to stderr (journald's socket
// under systemd), which may block when the reader lags, and an
// announcement never waits for it.
func (a *Announcer) logAnnounced(ans []Announcement) {
	for _, an := range ans {
		e := an.Event
		a.log.Info("stepdown event", "type", e.Type, "reason", e.Reason, "source", e.Source, "seq", an.Seq(), "epoch", e.Epoch,
			"drill", e.Drill, "detail", e.Detail)
	}
}
