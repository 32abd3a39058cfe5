package daemon

import (
	"context"
	"fmt"
	"log/slog"
	"path/filepath"
	"sync"
	"sync/atomic"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/clockwatch/clockwatch/internal/announce"
	"github.com/clockwatch/clockwatch/internal/config"
	"github.com/clockwatch/clockwatch/internal/host"
	"github.com/clockwatch/clockwatch/internal/policy"
	"github.com/clockwatch/clockwatch/internal/pulse"
	"github.com/clockwatch/clockwatch/internal/step"
	"github.com/clockwatch/clockwatch/internal/timesources"
)

// stepEventBuffer is how many step events the announcer's feed may fall
// behind.
const stepEventBuffer = 1024

// startPoll is how often the readings are looked at while the start waits
// for a source's first poll.
const startPoll = 20 * time.Millisecond

// ClocksSource is the name the clock sampler reports under: its first
// sample (with any step seen at restart) is part of the evidence the state
// waits for at start.
const ClocksSource = "clocks"

// JournalSource is the probe name of the journal: while the epoch is not
// durable it is a lost probe (reason probe_lost, source journal).
const JournalSource = "journal"

// NewAnnouncer returns the daemon's announcer: the policy with its state in
// stateDir (empty: not kept), the epoch the journal persisted, and the
// evidence the start waits for (the clocks, the journal, and the first
// reading of those time sources that may move the state, sources.Names, the
// kernel among them). Every transport (the stepdown socket, the segment)
// follows it; none owns it.
func NewAnnouncer(pc policy.Config, steps *Steps, sources timesources.Members, stateDir string, logger *slog.Logger) *announce.Announcer {
	o := announce.Options{Logger: logger, Epoch: steps.Journal.State().Epoch,
		Await: append([]string{ClocksSource, JournalSource}, sources.Names()...)}
	if stateDir != "" {
		o.StatePath = filepath.Join(stateDir, announce.StateFile)
	}
	return announce.New(pc, o)
}

// Feed hands the announcer its inputs: step events from the bus once the
// journal has them, and each poll of the time sources (the kernel among
// them). It is the same whichever transports are on.
type Feed struct {
	ann *announce.Announcer
	sub interface {
		C() <-chan step.Event
		Close()
	}
	sources timesources.Members
	steps   *Steps
	opt     FeedOptions
	// base and lastFed (nanoseconds since base, monotonic) time the feed's
	// longest quiet.
	base    time.Time
	lastFed atomic.Int64
	// fed is set once the feed has handed over the first sample's events:
	// the pulse's polls wait for it.
	fed atomic.Bool
	// ownPulse is run by Tasks when NewStepdown was given none.
	ownPulse *pulse.Pulse
	// journalMu guards whether the journal probe's last report was good:
	// a good one is not repeated (the pulse polls every second).
	journalMu sync.Mutex
	journalOK bool
	log       *slog.Logger
	// WriteDelay is the latency from a clock-set mark to the stepdown
	// message having been written to the subscribers' sockets; register it
	// with the socket.
	WriteDelay *WriteDelay
}

// MetricStepdownWriteDelay is the name of WriteDelay's histogram.
const MetricStepdownWriteDelay = "clockwatch_stepdown_write_delay_seconds"

// WriteDelay exports the mark → socket write latency as a histogram.
type WriteDelay struct {
	h    step.Histogram
	desc *prometheus.Desc
}

// Describe implements prometheus.Collector.
func (w *WriteDelay) Describe(ch chan<- *prometheus.Desc) { ch <- w.desc }

// Collect implements prometheus.Collector.
func (w *WriteDelay) Collect(ch chan<- prometheus.Metric) {
	n, sum, buckets := w.h.Snapshot()
	ch <- prometheus.MustNewConstHistogram(w.desc, n, sum, buckets)
}

// FeedOptions say when the policy is fed the readings of the kernel and the
// time sources.
type FeedOptions struct {
	// Poll is the pulse's period for the feed (chrony.poll_interval).
	Poll time.Duration
	// Polled fires after each poll of chronyd (nil without chrony): the
	// readings are fed then, chronyd's new figures (and the kernel state
	// chronyd has just set) at once.
	Polled <-chan struct{}
	// News fires when a source has news the policy must hear at once
	// (Member.News: VMClock's marker changed): the readings are fed then.
	News <-chan struct{}
	// Periodic, when set, says whether every Poll is needed besides: a
	// source with news at its own rate (ptp4l found, ntpd, NTP probes).
	// nil: every Poll.
	Periodic func() bool
	// MaxQuiet bounds the time between two feeds whatever Periodic says
	// (chrony.max_poll_interval).
	MaxQuiet time.Duration
	// Pulse runs the periodic feed and the heartbeat; the caller runs it.
	// nil: a pulse of its own, in Tasks.
	Pulse *pulse.Pulse
	// Subscribers counts the stepdown socket's clients (nil without the
	// socket): WriteDelay is observed only while one is connected.
	Subscribers func() int
	// Fed, when set, is called after each feed, once the announcer has
	// the readings: the sources' figures may have changed (the clockbound
	// segment looks at them then, not on a timer).
	Fed func()
}

// NewFeed returns the feed of ann: sources are the enabled time sources, the
// kernel among them; fo says when their readings are fed.
func NewFeed(ann *announce.Announcer, steps *Steps, sources timesources.Members, fo FeedOptions, logger *slog.Logger) *Feed {
	var own *pulse.Pulse
	if fo.Pulse == nil {
		own = pulse.New()
		fo.Pulse = own
	}
	if fo.Subscribers == nil {
		fo.Subscribers = func() int { return 0 }
	}
	wd := &WriteDelay{desc: prometheus.NewDesc(MetricStepdownWriteDelay,
		"Latency from the kernel's clock-set notification (the watcher's CLOCK_MONOTONIC read) to the stepdown message of the step it revealed having been written to the subscribers' sockets (those whose buffer had room; the others get it from their queue), counted only when a subscriber was connected.",
		nil, nil)}
	f := &Feed{ann: ann, sub: steps.Durable.Subscribe(stepEventBuffer), sources: sources,
		steps: steps, opt: fo, base: time.Now(), log: logger, WriteDelay: wd, ownPulse: own}
	fo.Pulse.EveryWhile(fo.Poll, f.periodic, f.rest)
	return f
}

// rest says how long the feed may wait for the pulse: not at all until the
// first sample's events are handed over, nor while a source has news at
// its own rate (or when none says otherwise); else chronyd's polls and the
// sources' news feed it, and the pulse need come back only when MaxQuiet
// would pass (and every pulse.Rest, to find a source that starts to have
// news of its own: a ptp4l found).
func (s *Feed) rest() time.Duration {
	if !s.fed.Load() || s.opt.Periodic == nil || s.opt.Periodic() {
		return 0
	}
	return s.opt.MaxQuiet - s.quiet()
}

// quiet is the time since the last feed.
func (s *Feed) quiet() time.Duration {
	return time.Duration(int64(time.Since(s.base)) - s.lastFed.Load())
}

// Tasks are the feed (and the pulse, when it is its own).
func (s *Feed) Tasks() []func(context.Context) error {
	ts := []func(context.Context) error{s.Run}
	if s.ownPulse != nil {
		ts = append(ts, s.ownPulse.Run)
	}
	return ts
}

// Run hands the announcer every step event once the journal has written it
// and, after each poll of chronyd, the journal's state and the readings of
// the kernel and the time sources (the pulse feeds them every poll interval
// besides, on the tick it shares with the clockbound segment), only once
// the events of the sampler's first sample are in: so the clocks' evidence
// reaches the policy only after them, a step seen at restart included.
func (s *Feed) Run(ctx context.Context) error {
	// The announcer's deadlines are timed while the feed runs: the daemon
	// owns both.
	defer s.ann.Close()
	defer s.sub.Close()
	defer s.fed.Store(false)
	ready := s.steps.FirstSampleDurable()
	var fast <-chan time.Time
	var polled, news <-chan struct{}
	for {
		select {
		case <-ctx.Done():
			return nil
		case e, ok := <-s.sub.C():
			if !ok {
				return nil
			}
			s.apply(e)
		case <-ready:
			ready = nil
			// The first sample's events were published on the durable
			// bus before this closed: apply them first.
			for drained := false; !drained; {
				select {
				case e := <-s.sub.C():
					s.apply(e)
				default:
					drained = true
				}
			}
			s.ann.ProbeOK(ClocksSource)
			polled, news = s.opt.Polled, s.opt.News
			s.pollOnce()
			s.fed.Store(true)
			if s.ann.Starting() {
				fast = time.After(startPoll)
			}
		case <-fast:
			// Until every source's first poll is in, look more often
			// than the poll interval: the start waits on them.
			s.pollOnce()
			if s.ann.Starting() {
				fast = time.After(startPoll)
			}
		case <-polled:
			s.pollOnce()
		case <-news:
			s.pollOnce()
		}
	}
}

// periodic is the pulse's feed: every Poll while Periodic says so (or
// without it), else once MaxQuiet has passed without a feed, or half of it
// when the pulse calls early to share a wake-up with other work (it may,
// by up to half the rest); never before the feed has handed over the first
// sample's events.
func (s *Feed) periodic() {
	if !s.fed.Load() {
		return
	}
	if s.opt.Periodic == nil || s.opt.Periodic() || s.quiet() >= s.opt.MaxQuiet/2 {
		s.pollOnce()
	}
}

// pollOnce feeds the journal's state and the readings of the time sources
// (the kernel among them).
func (s *Feed) pollOnce() {
	s.lastFed.Store(int64(time.Since(s.base)))
	s.journalProbe()
	s.ann.Readings(s.sources.Readings())
	if s.opt.Fed != nil {
		s.opt.Fed()
	}
}

// apply turns one detector event into an input of the announcer. Events arrive once
// the journal has written them; when it could not, the journal probe fails
// first, so the epoch is not announced as if it were durable.
func (s *Feed) apply(e step.Event) {
	if !s.steps.Journal.Persistent() { // an atomic: the journal may still hold its lock
		s.journalProbe() // the good news waits for the next poll
	}
	switch e.Type {
	case step.TypeStep:
		s.ann.Step(policy.Step{Seconds: e.Step.Seconds(), Mono: time.Duration(e.Mono), WallBefore: e.WallBefore,
			WallAfter: e.WallAfter, Epoch: e.Epoch, How: seenBy(e.Seen)})
		// Step writes to every socket subscriber whose buffer has room
		// before it returns (the socket is attached in line).
		if e.MarkMono != 0 && s.opt.Subscribers() > 0 {
			s.WriteDelay.h.Observe(time.Duration(host.Monotonic() - e.MarkMono))
		}
	case step.TypeWake:
		s.ann.Woke(e.Suspended)
	}
}

// journalProbe tells the policy whether the epoch is being persisted: while
// it is not, a restart could announce an older epoch (or the same one for a
// new step), so clockwatch cannot vouch for fencing tokens and the journal
// counts as a lost probe (reason probe_lost, source journal).
//
// A good report following a good one is not told again: it would change
// nothing in the policy (the journal's reports are not among the readings a
// resume waits for). Failures are told every time, as before (a reload that
// turns probe_lost back on must see them).
func (s *Feed) journalProbe() {
	s.journalMu.Lock()
	defer s.journalMu.Unlock()
	err := s.steps.Journal.Err()
	if err == nil && s.journalOK {
		return
	}
	s.journalOK = err == nil
	if err != nil {
		s.ann.ProbeFailed(JournalSource, fmt.Errorf("the clock epoch is not durable: %w", err))
		return
	}
	s.ann.ProbeOK(JournalSource)
}

// feedOptions feed the policy after each poll of the source whose polls it
// follows (chronyd's poller polls just after chronyd's clock updates, when
// its figures and the kernel state it sets change, and at once after a
// clock set); every poll interval only while a source with news at its own
// rate is there (Member.OwnRate: ptp4l or ntpd once found, NTP probes), and
// at least every longest quiet. Without such a source (chrony off): every
// poll interval. The registry gives both (timesources.FeedCadence:
// chrony.poll_interval and chrony.max_poll_interval).
func feedOptions(cfg *config.Config, sources timesources.Members, pl *pulse.Pulse) FeedOptions {
	c := timesources.FeedCadence(cfg)
	fo := FeedOptions{Poll: c.Poll, MaxQuiet: c.MaxQuiet, Pulse: pl, News: sources.News()}
	if fo.Polled = sources.Polled(); fo.Polled != nil {
		fo.Periodic = sources.OwnRate()
	}
	return fo
}

// seenBy converts how the detector saw a step into the policy's own type:
// the policy does not import the detector.
func seenBy(s step.Seen) policy.Seen {
	switch s {
	case step.SeenSampling:
		return policy.SeenSampling
	case step.SeenClockSet:
		return policy.SeenClockSet
	case step.SeenBoth:
		return policy.SeenBoth
	case step.SeenRestart:
		return policy.SeenRestart
	}
	return 0
}
