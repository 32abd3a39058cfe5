package step

import (
	"context"
	"errors"
	"io"
	"log/slog"
	"sync/atomic"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/clockwatch/clockwatch/internal/hostclock"
	"github.com/clockwatch/clockwatch/internal/hostclock/hostclocktest"
	"github.com/clockwatch/clockwatch/internal/kernel"
)

func discardLogger() *slog.Logger { return slog.New(slog.NewTextHandler(io.Discard, nil)) }

func TestSamplerMarkWakesDetectorAtOnce(t *testing.T) {
	t.Parallel()
	cfg := DefaultConfig()
	cfg.Interval = time.Hour // only marks can cause a sample
	clocks := &hostclocktest.Clocks{Start: kernel.Sample{Mono: 1e9, Boot: 1e9, Real: 1.7e18, Window: 1000}}
	marks := make(chan hostclock.Mark)
	events := make(chan Event, 4)
	s := NewSampler(cfg, clocks, marks, NewDetector(cfg, State{Epoch: 7}), discardLogger(), func(e Event) { events <- e })
	ctx, cancel := context.WithCancel(t.Context())
	done := make(chan error)
	go func() { done <- s.Run(ctx) }()
	<-s.Ready()

	clocks.Step(-12400 * time.Millisecond)
	marks <- hostclock.Mark{Mono: clocks.Last().Mono}
	var e Event
	select {
	case e = <-events:
	case <-time.After(10 * time.Second):
		t.Fatal("no event 10s after the mark")
	}
	cancel()
	if err := <-done; err != nil {
		t.Fatalf("Run() = %v", err)
	}
	want := got{Type: "step", Step: -12400 * time.Millisecond, Seen: "both", Epoch: 8, Seq: 1, Delay: time.Millisecond + time.Microsecond}
	if diff := cmp.Diff([]got{want}, project([]Event{e})); diff != "" {
		t.Errorf("event (-want +got):\n%s", diff)
	}
	snap := s.Gauges().Load()
	if snap.State != (State{Epoch: 8, Seq: 1}) || snap.Samples != 2 || snap.Marks != 1 {
		t.Errorf("gauges = %+v, want epoch 8 seq 1, 2 samples, 1 mark", snap)
	}
}

func TestSamplerTicksAndSurvivesReadErrors(t *testing.T) {
	t.Parallel()
	cfg := DefaultConfig()
	cfg.Interval = time.Millisecond
	clocks := &hostclocktest.Clocks{Start: kernel.Sample{Mono: 1e9, Boot: 1e9, Real: 1.7e18}, Err: errors.New("EINVAL")}
	s := NewSampler(cfg, clocks, nil, NewDetector(cfg, State{}), discardLogger())
	ctx, cancel := context.WithCancel(t.Context())
	defer cancel()
	done := make(chan error)
	go func() { done <- s.Run(ctx) }()
	for deadline := time.Now().Add(10 * time.Second); s.Gauges().Load().ReadErrors < 3; time.Sleep(time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatal("no read errors counted after 10s")
		}
	}
	clocks.SetErr(nil)
	for deadline := time.Now().Add(10 * time.Second); s.Gauges().Load().Samples < 3; time.Sleep(time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatal("fewer than 3 samples after 10s")
		}
	}
	cancel()
	if err := <-done; err != nil {
		t.Fatalf("Run() = %v", err)
	}
}

func TestObserveDoesNotAllocate(t *testing.T) {
	s := newSim(DefaultConfig(), State{})
	s.rate = 1e-7
	ticks(2, tick)(s)
	allocs := testing.AllocsPerRun(1000, func() {
		s.advance(tick)
		if evs := s.d.Observe(s.sample()); evs != nil {
			t.Fatalf("unexpected events %v", evs)
		}
	})
	if allocs != 0 {
		t.Errorf("Observe allocates %v times per sample, want 0", allocs)
	}
}

func TestSamplerTickDoesNotAllocate(t *testing.T) {
	cfg := DefaultConfig()
	clocks := &hostclocktest.Clocks{Start: kernel.Sample{Mono: 1e9, Boot: 1e9, Real: 1.7e18}}
	s := NewSampler(cfg, clocks, make(chan hostclock.Mark), NewDetector(cfg, State{}), discardLogger())
	s.tick()
	if allocs := testing.AllocsPerRun(1000, s.tick); allocs != 0 {
		t.Errorf("a sampler tick allocates %v times, want 0", allocs)
	}
}

// BenchmarkObserve is one Observe of a steady clock: the per-sample cost of
// the arithmetic.
func BenchmarkObserve(b *testing.B) {
	s := newSim(DefaultConfig(), State{})
	s.observe()
	smp := s.sample()
	b.ReportAllocs()
	for b.Loop() {
		smp.Mono += int64(tick)
		smp.Boot += int64(tick)
		smp.Real += int64(tick)
		smp.TAI += int64(tick)
		if s.d.Observe(smp) != nil {
			b.Fatal("event in a steady clock")
		}
	}
}

// BenchmarkSampleAndObserve is what the Sampler does every interval: read
// the real kernel clocks and observe.
func BenchmarkSampleAndObserve(b *testing.B) {
	cfg := DefaultConfig()
	s := NewSampler(cfg, hostclock.SysClocks{}, make(chan hostclock.Mark), NewDetector(cfg, State{}), discardLogger())
	s.tick()
	b.ReportAllocs()
	for b.Loop() {
		s.tick()
	}
}

func TestSamplerRereadsWideWindows(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name       string
		windows    []int64
		wantWindow int64
		wantReads  int
	}{
		{"narrow first read is kept", []int64{2_000}, 2_000, 1},
		{"a pause in the first read is read again", []int64{3_000_000, 4_000}, 4_000, 2},
		{"keeps the narrowest of four", []int64{3_000_000, 900_000, 2_000_000, 700_000}, 700_000, 4},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			c := &hostclocktest.Clocks{Tick: time.Microsecond, Start: kernel.Sample{Real: 1.7e18}, Windows: tt.windows}
			s := NewSampler(DefaultConfig(), c, nil, NewDetector(DefaultConfig(), State{}), discardLogger())
			if err := s.read(); err != nil {
				t.Fatal(err)
			}
			if s.sample.Window != tt.wantWindow || c.Reads() != tt.wantReads {
				t.Errorf("window %d after %d reads, want %d after %d", s.sample.Window, c.Reads(), tt.wantWindow, tt.wantReads)
			}
		})
	}
}

// switchWatcher is a clock-set watcher the test turns on and off.
type switchWatcher struct {
	watching    atomic.Bool
	ready, done chan struct{}
}

func (w *switchWatcher) Watching() bool         { return w.watching.Load() }
func (w *switchWatcher) Ready() <-chan struct{} { return w.ready }
func (w *switchWatcher) Done() <-chan struct{}  { return w.done }

// TestSamplerAdaptsItsInterval: fast while the watcher is not watching, slow
// once it is, fast again for a burst after a mark or a Burst call, and fast
// for good once the watcher is done.
func TestSamplerAdaptsItsInterval(t *testing.T) {
	t.Parallel()
	cfg := DefaultConfig()
	cfg.Interval = time.Millisecond
	clocks := &hostclocktest.Clocks{Start: kernel.Sample{Mono: 1e9, Boot: 1e9, Real: 1.7e18, Window: 1000}}
	marks := make(chan hostclock.Mark, 1)
	w := &switchWatcher{ready: make(chan struct{}), done: make(chan struct{})}
	s := NewSampler(cfg, clocks, marks, NewDetector(cfg, State{}), discardLogger())
	s.Adapt(time.Hour, w)
	ctx, cancel := context.WithCancel(t.Context())
	done := make(chan error)
	go func() { done <- s.Run(ctx) }()
	<-s.Ready()
	samples := func() uint64 { return s.Gauges().Load().Samples }
	waitFor := func(what string, n uint64) {
		t.Helper()
		for deadline := time.Now().Add(10 * time.Second); samples() < n; time.Sleep(time.Millisecond) {
			if time.Now().After(deadline) {
				t.Fatalf("%s: %d samples after 10s, want %d", what, samples(), n)
			}
		}
	}
	quiet := func(what string) {
		t.Helper()
		before := samples()
		time.Sleep(50 * time.Millisecond)
		if got := samples(); got > before+1 {
			t.Fatalf("%s: %d samples in 50ms at a 1h interval, want at most 1", what, got-before)
		}
	}
	waitFor("watcher not yet watching", 5)
	w.watching.Store(true)
	close(w.ready)
	time.Sleep(10 * time.Millisecond) // the sample in flight, if any
	quiet("watcher watching")

	n := samples()
	marks <- hostclock.Mark{Mono: clocks.Last().Mono}
	waitFor("burst after a mark", n+10)
	if d := s.BurstDuration(); d != 2*time.Second {
		t.Errorf("BurstDuration() = %v at a 1ms interval, want 2s", d)
	}

	w.watching.Store(false)
	close(w.done)
	n = samples()
	waitFor("watcher done", n+10)
	cancel()
	if err := <-done; err != nil {
		t.Fatalf("Run() = %v", err)
	}
}

// TestSamplerBurst: a Burst call samples at once, then fast.
func TestSamplerBurst(t *testing.T) {
	t.Parallel()
	cfg := DefaultConfig()
	cfg.Interval = time.Millisecond
	clocks := &hostclocktest.Clocks{Start: kernel.Sample{Mono: 1e9, Boot: 1e9, Real: 1.7e18, Window: 1000}}
	w := &switchWatcher{ready: make(chan struct{}), done: make(chan struct{})}
	w.watching.Store(true)
	close(w.ready)
	marks := make(chan hostclock.Mark)
	s := NewSampler(cfg, clocks, marks, NewDetector(cfg, State{}), discardLogger())
	s.Adapt(time.Hour, w)
	ctx, cancel := context.WithCancel(t.Context())
	defer cancel()
	go s.Run(ctx)
	<-s.Ready()
	time.Sleep(20 * time.Millisecond)
	n := s.Gauges().Load().Samples
	if n > 2 {
		t.Fatalf("%d samples in 20ms while idle at 1h, want 1 or 2", n)
	}
	marks <- hostclock.Mark{Mono: 2e9} // a clock set: a burst of fast samples
	for deadline := time.Now().Add(10 * time.Second); s.Gauges().Load().Samples < n+10; time.Sleep(time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatalf("%d samples 10s after Burst, want %d", s.Gauges().Load().Samples, n+10)
		}
	}
}

// TestSamplerMeasuresMarkToBus: an event revealed by a mark carries the
// mark's time, and its latency to the last sink is counted.
func TestSamplerMeasuresMarkToBus(t *testing.T) {
	t.Parallel()
	cfg := DefaultConfig()
	cfg.Interval = time.Hour
	clocks := &hostclocktest.Clocks{Start: kernel.Sample{Mono: 1e9, Boot: 1e9, Real: 1.7e18, Window: 1000}}
	marks := make(chan hostclock.Mark)
	events := make(chan Event, 4)
	s := NewSampler(cfg, clocks, marks, NewDetector(cfg, State{}), discardLogger(), func(e Event) { events <- e })
	s.now = func() int64 { return clocks.Last().Mono }
	ctx, cancel := context.WithCancel(t.Context())
	defer cancel()
	go s.Run(ctx)
	<-s.Ready()
	clocks.Step(time.Second)
	mark := clocks.Last().Mono + 500_000 // between the last sample and the next read
	marks <- hostclock.Mark{Mono: mark}
	e := <-events
	if e.MarkMono != mark {
		t.Errorf("MarkMono = %d, want the mark's %d", e.MarkMono, mark)
	}
	for deadline := time.Now().Add(10 * time.Second); ; time.Sleep(time.Millisecond) {
		n, sum, buckets := s.Gauges().Published().Snapshot()
		if n == 1 {
			// The fake clock's next read is 0.5 ms after the mark.
			if sum != 0.0005 || buckets[0.001] != 1 || buckets[0.0001] != 0 {
				t.Errorf("published: sum %v, buckets %v; want 0.5 ms", sum, buckets)
			}
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("published count %d 10s after the event, want 1", n)
		}
	}
}

// pacer is a Pacer whose calls the test makes.
type pacer struct {
	period time.Duration
	f      func()
}

func (p *pacer) Every(period time.Duration, f func()) { p.period, p.f = period, f }

// TestSamplerPaced: paced, the idle samples follow the pacer's calls (one
// sample each, none in between), and the fast ones its own timer.
func TestSamplerPaced(t *testing.T) {
	t.Parallel()
	cfg := DefaultConfig()
	cfg.Interval = time.Millisecond
	clocks := &hostclocktest.Clocks{Start: kernel.Sample{Mono: 1e9, Boot: 1e9, Real: 1.7e18, Window: 1000}}
	w := &switchWatcher{ready: make(chan struct{}), done: make(chan struct{})}
	w.watching.Store(true)
	close(w.ready)
	marks := make(chan hostclock.Mark)
	s := NewSampler(cfg, clocks, marks, NewDetector(cfg, State{}), discardLogger())
	// An idle interval the sampler's own timer would beat at within the
	// test: paced, it must not.
	s.Adapt(20*time.Millisecond, w)
	var p pacer
	s.Pace(&p)
	if p.period != 20*time.Millisecond || p.f == nil {
		t.Fatalf("Pace registered %v, want the idle interval 20ms", p.period)
	}
	ctx, cancel := context.WithCancel(t.Context())
	defer cancel()
	go s.Run(ctx)
	<-s.Ready()
	samples := func() uint64 { return s.Gauges().Load().Samples }
	time.Sleep(100 * time.Millisecond)
	if n := samples(); n != 1 {
		t.Fatalf("%d samples in 100 ms without a beat at a 20 ms idle interval, want the first alone", n)
	}
	for i := range 3 {
		p.f()
		want := uint64(2 + i)
		for deadline := time.Now().Add(10 * time.Second); samples() < want; time.Sleep(time.Millisecond) {
			if time.Now().After(deadline) {
				t.Fatalf("beat %d: %d samples after 10 s, want %d", i, samples(), want)
			}
		}
		time.Sleep(60 * time.Millisecond)
		if n := samples(); n != want {
			t.Fatalf("beat %d: %d samples, want %d (one a beat)", i, n, want)
		}
	}
	marks <- hostclock.Mark{Mono: 2e9} // a burst: the sampler's own timer, fast
	n := samples()
	for deadline := time.Now().Add(10 * time.Second); samples() < n+10; time.Sleep(time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatalf("%d samples 10 s after a mark, want %d", samples(), n+10)
		}
	}
}
