package daemon

import (
	"context"
	"log/slog"

	"github.com/clockwatch/clockwatch/internal/bus"
	"github.com/clockwatch/clockwatch/internal/hostclock"
	"github.com/clockwatch/clockwatch/internal/journal"
	"github.com/clockwatch/clockwatch/internal/step"
)

// journalBuffer is how many events the journal may fall behind (each costs
// two fsyncs) before the bus drops some for it.
const journalBuffer = 1024

// Steps is step detection wired up: the clock-set watcher and the sampler
// feed one Detector; its events go to the metrics collector and the log
// directly, and through the bus to the journal and to any other subscriber
// (the stepdown feed, which hands them to the announcer).
type Steps struct {
	// Bus carries every event (steps, clock sets, resumes) as the detector
	// sees it. Subscribers filter on Event.Type; a full subscriber misses
	// events, never blocks detection.
	Bus *bus.Bus[step.Event]
	// Durable carries the same events once the journal has written them
	// (or failed to: Journal.Err says so): what announces an epoch to
	// clients subscribes here, so that an epoch announced is never lost by
	// a crash.
	Durable *bus.Bus[step.Event]
	// Journal persists the events and the clock epoch.
	Journal *journal.Journal
	// Collector exports the step metrics; register it.
	Collector *step.Collector
	// Watcher and Sampler are the two tasks feeding the Detector.
	Watcher *hostclock.ClockSetWatcher
	Sampler *step.Sampler

	journalSub *bus.Subscription[step.Event]
	// firstDurable is closed once the first sample's events are on Durable.
	firstDurable chan struct{}
	log          *slog.Logger
}

// NewSteps builds the pipeline. cfg and jcfg must have passed Validate;
// clocks nil means the real clocks. Opening the journal never fails: without
// a writable state directory it runs in memory (logged once,
// clockwatch_journal_persistence_ok 0).
func NewSteps(cfg step.Config, jcfg journal.Config, clocks hostclock.ClockReader, logger *slog.Logger) *Steps {
	if clocks == nil {
		clocks = hostclock.SysClocks{}
	}
	j := journal.Open(jcfg, journal.Options{Logger: logger.With("component", "journal")})
	b := bus.New[step.Event]()
	w := hostclock.NewClockSetWatcher()
	det := step.NewDetector(cfg, j.State())
	s := &Steps{Bus: b, Durable: bus.New[step.Event](), Journal: j, Watcher: w, firstDurable: make(chan struct{}), log: logger}
	// The journal subscribes before the sampler starts, so it misses
	// nothing.
	s.journalSub = b.Subscribe(journalBuffer)
	// Sinks run on the sampler's goroutine: the collector only counts and
	// the bus never blocks.
	record := func(e step.Event) { s.Collector.Record(e) }
	s.Sampler = step.NewSampler(cfg, clocks, w.Marks(), det, logger.With("component", "step"), record, b.Publish)
	// Fast sampling only while the watcher is down or after a clock change:
	// the watcher's marks wake the sampler at once in any case.
	s.Sampler.Adapt(cfg.IdleInterval, w)
	s.Collector = step.NewCollector(s.Sampler.Gauges(), j, b, w)
	return s
}

// Tasks returns the long-running parts to start under the daemon's
// errgroup. None fails the daemon on its own: without the clock-set
// timerfd, detection goes on by sampling alone (logged,
// clockwatch_clock_set_watcher_up 0).
func (s *Steps) Tasks() []func(context.Context) error {
	return []func(context.Context) error{
		func(ctx context.Context) error {
			if err := s.Watcher.Run(ctx); err != nil {
				s.log.Error("Kernel clock-set notifications unavailable: steps are seen by sampling only, up to one interval late",
					"err", err)
			}
			return nil
		},
		s.Sampler.Run,
		func(ctx context.Context) error {
			defer s.journalSub.Close()
			// The gap of the first sample and of the last one, so that the
			// next start in this boot sees a step made while we were down.
			// The first sample's events (a step made while we were down)
			// are queued before Ready: append them first, so that the
			// baseline is never durable ahead of the step it hides.
			select {
			case <-s.Sampler.Ready():
				s.drainQueued()
				close(s.firstDurable)
				snap := s.Sampler.Gauges().Load()
				s.Journal.SaveBaseline(snap.Sample, snap.State)
			case <-ctx.Done():
			}
			err := s.Journal.Run(ctx, s.journalSub.C(), s.Durable.Publish)
			snap := s.Sampler.Gauges().Load()
			s.Journal.SaveBaseline(snap.Sample, snap.State)
			return err
		},
	}
}

// drainQueued appends the events already queued for the journal.
func (s *Steps) drainQueued() {
	for {
		select {
		case e, ok := <-s.journalSub.C():
			if !ok {
				return
			}
			_ = s.Journal.AppendThen(e, s.Durable.Publish)
		default:
			return
		}
	}
}

// FirstSampleDurable is closed once the events of the first sample (a step
// made while clockwatch was down) have been written by the journal and
// published on Durable: a subscriber of Durable then already holds them.
func (s *Steps) FirstSampleDurable() <-chan struct{} { return s.firstDurable }

// Ready is closed once the first sample has been taken. (The watcher arms
// within microseconds of its start; a step in between is seen by sampling.)
func (s *Steps) Ready() <-chan struct{} { return s.Sampler.Ready() }
