package segment

import (
	"context"
	"path/filepath"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/testutil"

	"github.com/clockwatch/clockwatch/internal/clockbound"
	"github.com/clockwatch/clockwatch/internal/timesource"
	"github.com/clockwatch/clockwatch/internal/transport/segment/segmenttest"
	"github.com/clockwatch/clockwatch/stepdown"
	"github.com/clockwatch/clockwatch/stepdown/boundedtime"
)

// The segment follows the stepdown announcement without waiting for its
// interval, and the bound grows between time-source updates.
func TestPublisherFollowsTheAnnouncement(t *testing.T) {
	t.Parallel()
	sd, _ := segmenttest.Stepdown(t, 10*time.Millisecond)
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()

	path := filepath.Join(t.TempDir(), "shm0")
	seg, err := clockbound.Create(path, 0o644, -1)
	if err != nil {
		t.Fatal(err)
	}
	last := time.Now()
	reading := timesource.Reading{Source: "chrony", Role: timesource.Authoritative, Found: true, Up: true, HasData: true,
		Synchronized: true, ErrorBound: time.Millisecond, LastSuccess: last}
	cfg := clockbound.DefaultConfig()
	cfg.Interval = time.Hour    // only events write after the first
	cfg.MaxDriftPPB = 1_000_000 // 1000 ppm: growth visible within milliseconds
	p := NewPublisher(cfg, seg, Options{Announcer: sd, Readings: func() []timesource.Reading { return []timesource.Reading{reading} }})
	done := make(chan error, 1)
	go func() { done <- p.Run(ctx) }()
	waitWrites := func(n uint64) Written {
		t.Helper()
		deadline := time.Now().Add(10 * time.Second)
		for p.Last().Writes < n {
			if time.Now().After(deadline) {
				t.Fatalf("%d writes within 10s, want %d", p.Last().Writes, n)
			}
			time.Sleep(time.Millisecond)
		}
		return p.Last()
	}
	first := waitWrites(1)
	if first.Status != boundedtime.StatusSynchronized {
		t.Fatalf("first write %+v, want synchronized", first)
	}
	r, err := boundedtime.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close()

	time.Sleep(20 * time.Millisecond)
	if err := sd.Drill(stepdown.ReasonDrill, nil, 50*time.Millisecond); err != nil {
		t.Fatal(err)
	}
	w := waitWrites(2) // the stepdown event, not the hour-long interval
	if w.Status != boundedtime.StatusDisrupted {
		t.Errorf("write after the drill = %+v, want disrupted", w)
	}
	if _, _, st, err := r.Now(); err != nil || st != boundedtime.StatusDisrupted {
		t.Errorf("reader after the drill's write: %v, %v; want disrupted", st, err)
	}
	if w.Bound <= first.Bound {
		t.Errorf("bound %v after 20 ms at 1000 ppm, want more than the first write's %v", w.Bound, first.Bound)
	}
	if want := Grow(time.Millisecond, w.At.Sub(last), cfg.MaxDriftPPB); w.Bound != want {
		t.Errorf("bound %v, want 1 ms grown by 1000 ppm over %v = %v", w.Bound, w.At.Sub(last), want)
	}
	waitFor := func(what string, cond func() bool) {
		t.Helper()
		deadline := time.Now().Add(10 * time.Second)
		for !cond() {
			if time.Now().After(deadline) {
				t.Fatalf("no %s within 10s", what)
			}
			sd.ProbeOK("test")
			time.Sleep(5 * time.Millisecond)
		}
	}
	waitFor("resume", func() bool { return p.Last().Status == boundedtime.StatusSynchronized })
	if n, err := testutil.GatherAndCount(prometheusRegistry(t, p), MetricBound, MetricStatus, MetricLastWrite, MetricWrites, MetricMaxDrift); err != nil || n != 8 {
		t.Errorf("gathered %d series (%v), want 8", n, err)
	}
	if problems, err := testutil.CollectAndLint(p.Collector()); err != nil || len(problems) > 0 {
		t.Errorf("lint: %v %v", problems, err)
	}
	cancel()
	if err := <-done; err != nil {
		t.Errorf("Run() = %v", err)
	}
}

// fakeClock is CLOCK_MONOTONIC_COARSE and the wall clock, moved by the test.
type fakeClock struct {
	mono time.Duration
	wall time.Time
}

func (c *fakeClock) MonotonicCoarse() (time.Duration, error) { return c.mono, nil }
func (c *fakeClock) advance(d time.Duration)                 { c.mono += d; c.wall = c.wall.Add(d) }

// TestPublisherWritesWhenFiguresChange: nudged (as the feed does after
// each feed, every second in this test), the publisher writes the segment
// only when a reader of the last write would read something else than the
// figures say (a source's new figures, another status), and when the last
// write is Config.Interval old; between writes, the bound a reader computes
// (ClockBound's arithmetic, boundedtime) is the one the figures give, to
// the tolerance. The pulse's tick, every Config.Interval, always writes.
func TestPublisherWritesWhenFiguresChange(t *testing.T) {
	t.Parallel()
	path := filepath.Join(t.TempDir(), "shm0")
	seg, err := clockbound.Create(path, 0o644, -1)
	if err != nil {
		t.Fatal(err)
	}
	clock := &fakeClock{mono: 100 * time.Second, wall: time.Date(2026, 12, 3, 21, 0, 0, 0, time.UTC)}
	reading := timesource.Reading{Source: "chrony", Role: timesource.Authoritative, Found: true, Up: true, HasData: true,
		Synchronized: true, ErrorBound: time.Millisecond, LastSuccess: clock.wall}
	cfg := clockbound.DefaultConfig()
	p := NewPublisher(cfg, seg, Options{Clock: clock, Now: func() time.Time { return clock.wall },
		Readings: func() []timesource.Reading { return []timesource.Reading{reading} }})
	defer p.Close()
	if err := p.Write(); err != nil {
		t.Fatal(err)
	}
	p.live = true
	r, err := boundedtime.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close()
	step := func(what string, wantWrites uint64) {
		t.Helper()
		clock.advance(time.Second)
		p.Nudge()
		if w := p.Last().Writes; w != wantWrites {
			t.Errorf("%s: %d writes, want %d", what, w, wantWrites)
		}
		snap, err := r.Snapshot()
		if err != nil {
			t.Fatal(err)
		}
		e, l, st, err := snap.At(clock.wall, clock.mono)
		if err != nil {
			t.Fatal(err)
		}
		v := Judge(nil, []timesource.Reading{reading}, clock.wall, cfg.MaxDriftPPB)
		if got := l.Sub(e) / 2; (got-v.Bound).Abs() > changeTolerance || st != v.Status {
			t.Errorf("%s: a reader reads %v, %s; the figures say %v, %s", what, got, st, v.Bound, v.Status)
		}
	}
	step("1 s, nothing new", 1)
	step("2 s, nothing new", 1)
	step("3 s, nothing new", 1)
	step("4 s: the interval", 2)
	step("5 s, nothing new", 2)
	// chronyd's next update: a tighter bound, as of now.
	reading.ErrorBound, reading.LastSuccess = 500*time.Microsecond, clock.wall.Add(time.Second)
	step("a new poll", 3)
	step("7 s, nothing new", 3)
	reading.Up = false
	step("chronyd lost: free running", 4)
	step("9 s, nothing new", 4)
	reading.Up = true
	step("chronyd back: synchronized", 5)
	// A bound growing faster than the drift (a source whose own figures
	// say so): written as soon as it parts from the reader's.
	reading.ErrorBound += 10 * time.Microsecond
	step("the bound grew by more than the drift", 6)
	clock.advance(time.Second)
	p.tick()
	if w := p.Last().Writes; w != 7 {
		t.Errorf("the pulse's tick a second after a write: %d writes, want 7", w)
	}
	// The feed's Nudge writes, then the tick on the same wake-up of the
	// pulse: one write.
	clock.advance(4 * time.Second)
	p.Nudge()
	p.tick()
	if w := p.Last().Writes; w != 8 {
		t.Errorf("a Nudge at the interval, then the tick on the same wake-up: %d writes, want 8 (one)", w)
	}
	if rec := p.Last().Record; rec.VoidAfter-rec.AsOf != clockbound.VoidAfter {
		t.Errorf("void_after %v after as_of, want %v", rec.VoidAfter-rec.AsOf, clockbound.VoidAfter)
	}
	if cfg.Interval != 4*time.Second || cfg.Validate() != nil {
		t.Errorf("default interval %v (%v), want 4s", cfg.Interval, cfg.Validate())
	}
}

func prometheusRegistry(t testing.TB, p *Publisher) *prometheus.Registry {
	t.Helper()
	reg := prometheus.NewPedanticRegistry()
	if err := reg.Register(p.Collector()); err != nil {
		t.Fatal(err)
	}
	return reg
}
