package step

import (
	"context"
	"log/slog"
	"math"
	"runtime"
	"sync/atomic"
	"time"

	"github.com/clockwatch/clockwatch/internal/host"
	"github.com/clockwatch/clockwatch/internal/hostclock"
	"github.com/clockwatch/clockwatch/internal/kernel"
)

// Sampler is the task that owns a Detector: it reads the clocks every
// interval and right after every clock-set mark, and hands the events to its
// sinks. Sinks run on the Sampler's goroutine and must not block (the bus
// drops rather than waits; the collector only updates counters).
//
// With Adapt, it samples every Config.Interval only where that buys
// something: while the clock-set watcher is not watching (sampling is then
// the only evidence), and for a burst after a mark, a resume or a Burst
// call; otherwise every idle interval. An idle process then wakes a few
// times a minute instead of ten times a second.
type Sampler struct {
	cfg    Config
	clocks hostclock.ClockReader
	marks  <-chan hostclock.Mark
	det    *Detector
	sinks  []func(Event)
	log    *slog.Logger

	idle    time.Duration // 0: always cfg.Interval
	watcher Watcher
	// beat, when paced (Pace), times the idle samples instead of the
	// Sampler's own timer.
	beat       chan struct{}
	paced      bool
	burstUntil time.Time
	fast       bool         // the interval chosen for the next sample, for tests
	now        func() int64 // CLOCK_MONOTONIC in ns

	gauges     Gauges
	ready      chan struct{}
	sample     kernel.Sample // a field, so reading into it does not allocate
	retry      kernel.Sample // a second reading when the first was disturbed
	readErrors uint64
}

// NewSampler returns a Sampler feeding det from clocks and marks (nil marks:
// sampling only). cfg must have passed Validate.
func NewSampler(cfg Config, clocks hostclock.ClockReader, marks <-chan hostclock.Mark, det *Detector, logger *slog.Logger, sinks ...func(Event)) *Sampler {
	return &Sampler{
		cfg: cfg, clocks: clocks, marks: marks, det: det, sinks: sinks, log: logger,
		ready: make(chan struct{}), now: host.Monotonic, beat: make(chan struct{}, 1),
	}
}

// Pacer calls functions periodically on shared wake-ups (*pulse.Pulse
// fits).
type Pacer interface {
	Every(period time.Duration, f func())
}

// Pace makes the idle samples (Adapt) follow p's calls, every idle or up to
// half of it sooner when p wakes for other work then, rather than a timer of
// the Sampler's own: the process wakes once for both. The fast samples keep
// the Sampler's timer. Call it after Adapt and before Run and p's Run.
func (s *Sampler) Pace(p Pacer) {
	if s.idle == 0 {
		return
	}
	s.paced = true
	p.Every(s.idle, func() {
		select {
		case s.beat <- struct{}{}:
		default:
		}
	})
}

// Watcher is what the Sampler needs to know of the clock-set watcher
// (*hostclock.ClockSetWatcher fits): whether it is watching, and when that
// starts and ends.
type Watcher interface {
	Watching() bool
	Ready() <-chan struct{}
	Done() <-chan struct{}
}

// BurstDuration is how long the Sampler samples at Config.Interval after a
// mark, a resume or a Burst call, at least 20 intervals: long enough for
// the step that often follows (a time daemon stepping after a resume, a
// second set by the same tool) and for the detector's late-mark rule, which
// looks one Interval back.
func (s *Sampler) BurstDuration() time.Duration { return max(2*time.Second, 20*s.cfg.Interval) }

// Adapt makes the Sampler sample every idle (longer than Config.Interval)
// while w watches for clock sets and no burst is under way. Call it before
// Run.
func (s *Sampler) Adapt(idle time.Duration, w Watcher) {
	if idle > s.cfg.Interval && w != nil {
		s.idle, s.watcher = idle, w
	}
}

// nextInterval chooses the wait before the next sample.
func (s *Sampler) nextInterval(now time.Time) time.Duration {
	s.fast = s.idle == 0 || !s.watcher.Watching() || now.Before(s.burstUntil)
	if s.fast {
		return s.cfg.Interval
	}
	return s.idle
}

// Gauges returns the Sampler's published state, safe to read from any
// goroutine.
func (s *Sampler) Gauges() *Gauges { return &s.gauges }

// Ready is closed once the first sample has been taken.
func (s *Sampler) Ready() <-chan struct{} { return s.ready }

// Run samples until ctx is done. It returns nil then; a failing clock read is
// counted and logged, not fatal.
func (s *Sampler) Run(ctx context.Context) error {
	s.gauges.store(s.det, s.readErrors)
	s.tick()
	close(s.ready)
	// A timer re-armed after every sample, not a ticker: the interval
	// changes with the mode, and a mark restarts the count.
	t := time.NewTimer(s.nextInterval(time.Now()))
	defer t.Stop()
	if !s.fast && s.paced {
		t.Stop()
	}
	var ready, done <-chan struct{}
	if s.watcher != nil {
		ready, done = s.watcher.Ready(), s.watcher.Done()
	}
	for {
		select {
		case <-ctx.Done():
			return nil
		case m := <-s.marks:
			s.det.ClockSet(m.Mono)
			s.burstUntil = time.Now().Add(s.BurstDuration())
			s.tick()
		case <-t.C:
			s.tick()
		case <-s.beat:
			if s.fast {
				continue // the timer samples, faster
			}
			s.tick()
		case <-ready:
			// The watcher is armed: slow down from the next sample on.
			ready = nil
		case <-done:
			// The watcher stopped: sampling is the only evidence left.
			done = nil
		}
		if d := s.nextInterval(time.Now()); s.fast || !s.paced {
			t.Reset(d)
		} else {
			t.Stop() // the pacer's beat samples next
		}
	}
}

// tick registers the marks already queued, so a tick that races with a mark
// does not call the step unmarked, then samples and observes.
func (s *Sampler) tick() {
	for drained := false; !drained; {
		select {
		case m := <-s.marks:
			s.det.ClockSet(m.Mono)
		default:
			drained = true
		}
	}
	if err := s.read(); err != nil {
		s.readErrors++
		if s.readErrors == 1 || s.readErrors%1000 == 0 {
			s.log.Error("Cannot read the clocks; step detection is blind until this clears", "err", err, "failures", s.readErrors)
		}
		s.gauges.store(s.det, s.readErrors)
		return
	}
	for _, e := range s.det.Observe(s.sample) {
		if (e.Seen == SeenClockSet || e.Seen == SeenBoth) && e.Delay > 0 {
			// Delay is the detecting sample's end minus the mark.
			e.MarkMono = s.sample.Mono + s.sample.Window - int64(e.Delay)
		}
		if e.Type == TypeWake || e.Type == TypeStep {
			// What follows a resume or a step is often another change.
			s.burstUntil = time.Now().Add(s.BurstDuration())
		}
		// Sinks first: the bus is what lock holders wait on; the log line
		// can come a few microseconds later.
		for _, sink := range s.sinks {
			sink(e)
		}
		if e.MarkMono != 0 {
			// The bus is the last sink: the event is with its subscribers.
			s.gauges.published.Observe(time.Duration(s.now() - e.MarkMono))
		}
		s.logEvent(e)
	}
	s.gauges.store(s.det, s.readErrors)
}

func (s *Sampler) logEvent(e Event) {
	switch e.Type {
	case TypeStep:
		s.log.Warn("Wall clock stepped",
			"step_seconds", e.StepSeconds(), "leap", e.Leap, "seen", e.Seen.String(),
			"wall_before", e.WallBefore.UTC(), "wall_after", e.WallAfter.UTC(),
			"delay_seconds", e.Delay.Seconds(), "epoch", e.Epoch, "seq", e.Seq)
	case TypeWake:
		s.log.Info("Resumed from suspend", "suspended_seconds", e.Suspended.Seconds(), "seen", e.Seen.String(), "seq", e.Seq)
	default:
		s.log.Info("Kernel reported a clock set without a measurable step",
			"change_seconds", e.StepSeconds(), "uncertainty_seconds", e.Uncertainty.Seconds(), "seq", e.Seq)
	}
}

// Snapshot is a consistent copy of the Sampler's state.
type Snapshot struct {
	// Sample is the last sample observed (zero before the first).
	Sample kernel.Sample
	// Slew is the measured slew rate of the REALTIME−BOOTTIME gap.
	Slew Slew
	// State is the Detector's epoch and sequence.
	State State
	// Samples, Marks and ReadErrors count samples observed, clock-set marks
	// received and failed clock reads.
	Samples, Marks, ReadErrors uint64
}

// Gauges publishes the Sampler's state to other goroutines without locks: a
// sequence counter, odd while a write is under way, lets a reader retry
// instead of seeing a torn snapshot. One goroutine writes.
type Gauges struct {
	seq                                    atomic.Uint64
	mono, real, boot, raw, tai, window     atomic.Int64
	slewBits                               atomic.Uint64
	slewValid                              atomic.Bool
	epoch, evSeq, samples, marks, readErrs atomic.Uint64

	// published is the latency from a clock-set mark to its event having
	// gone through every sink (the bus last).
	published Histogram
}

// Published returns the histogram of the latency from a clock-set mark
// (the watcher's CLOCK_MONOTONIC read) to its event having been handed to
// every sink, the bus included.
func (g *Gauges) Published() *Histogram { return &g.published }

// LatencyBuckets are the upper bounds, in seconds, of the latency
// histograms (Histogram): one per decade from 10 µs to 1 s, 9 series a
// histogram where DelayBuckets' 16 would make 19.
var LatencyBuckets = latencyBuckets[:]

var latencyBuckets = [...]float64{1e-5, 1e-4, 1e-3, 1e-2, 0.1, 1}

// Histogram counts durations in LatencyBuckets, safe for any number of
// writers and readers (each bucket is an atomic counter; a reader may see a
// count a moment before the sum that goes with it).
type Histogram struct {
	counts  [len(latencyBuckets) + 1]atomic.Uint64 // per bucket, the last +Inf
	count   atomic.Uint64
	sumNano atomic.Int64
}

// Observe adds d.
func (h *Histogram) Observe(d time.Duration) {
	secs := d.Seconds()
	i := 0
	for i < len(latencyBuckets) && secs > latencyBuckets[i] {
		i++
	}
	h.counts[i].Add(1)
	h.sumNano.Add(int64(d))
	h.count.Add(1)
}

// Snapshot returns the count, the sum in seconds and the cumulative bucket
// counts, as prometheus.MustNewConstHistogram takes them.
func (h *Histogram) Snapshot() (count uint64, sum float64, buckets map[float64]uint64) {
	buckets = make(map[float64]uint64, len(latencyBuckets))
	var cum uint64
	for i, ub := range latencyBuckets {
		cum += h.counts[i].Load()
		buckets[ub] = cum
	}
	return h.count.Load(), time.Duration(h.sumNano.Load()).Seconds(), buckets
}

func (g *Gauges) store(d *Detector, readErrors uint64) {
	smp, _ := d.Last()
	st, stats, slew := d.State(), d.Stats(), d.Slew()
	g.seq.Add(1)
	g.mono.Store(smp.Mono)
	g.real.Store(smp.Real)
	g.boot.Store(smp.Boot)
	g.raw.Store(smp.Raw)
	g.tai.Store(smp.TAI)
	g.window.Store(smp.Window)
	g.slewBits.Store(math.Float64bits(slew.Rate))
	g.slewValid.Store(slew.Valid)
	g.epoch.Store(st.Epoch)
	g.evSeq.Store(st.Seq)
	g.samples.Store(stats.Samples)
	g.marks.Store(stats.Marks)
	g.readErrs.Store(readErrors)
	g.seq.Add(1)
}

// Load returns a consistent snapshot.
func (g *Gauges) Load() Snapshot {
	for {
		before := g.seq.Load()
		if before%2 == 1 {
			runtime.Gosched()
			continue
		}
		s := Snapshot{
			Sample: kernel.Sample{
				Mono: g.mono.Load(), Real: g.real.Load(), Boot: g.boot.Load(),
				Raw: g.raw.Load(), TAI: g.tai.Load(), Window: g.window.Load(),
			},
			Slew:       Slew{Rate: math.Float64frombits(g.slewBits.Load()), Valid: g.slewValid.Load()},
			State:      State{Epoch: g.epoch.Load(), Seq: g.evSeq.Load()},
			Samples:    g.samples.Load(),
			Marks:      g.marks.Load(),
			ReadErrors: g.readErrs.Load(),
		}
		if g.seq.Load() == before {
			return s
		}
	}
}

// A read window wider than narrowWindow means the thread was descheduled or
// interrupted between the clock reads (a VM's vCPU paused by its host, say),
// and every difference between the clocks is that much less certain. The
// sampler then reads again, up to maxRereads times, and keeps the narrowest:
// a step's size is then exact to a few µs instead of to the pause.
const (
	narrowWindow = int64(50 * time.Microsecond)
	maxRereads   = 3
)

// read takes the sample into s.sample, reading again while the window is wide.
func (s *Sampler) read() error {
	if err := s.clocks.ReadClocks(&s.sample); err != nil {
		return err
	}
	for i := 0; i < maxRereads && s.sample.Window > narrowWindow; i++ {
		if err := s.clocks.ReadClocks(&s.retry); err != nil {
			return nil // the first sample stands
		}
		if s.retry.Window < s.sample.Window {
			s.sample = s.retry
		}
	}
	return nil
}
