package clockbound

import (
	"context"
	"path/filepath"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus/testutil"

	"github.com/clockwatch/clockwatch/internal/clockbound/clockboundtest"
	"github.com/clockwatch/clockwatch/internal/timesource"
	"github.com/clockwatch/clockwatch/stepdown"
	"github.com/clockwatch/clockwatch/stepdown/boundedtime"
)

// The segment follows the stepdown announcement without waiting for its
// interval, and the bound grows between time-source updates.
func TestPublisherFollowsTheAnnouncement(t *testing.T) {
	t.Parallel()
	sd, _ := clockboundtest.Stepdown(t, 10*time.Millisecond)
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()

	path := filepath.Join(t.TempDir(), "shm0")
	seg, err := Create(path, 0o644, -1)
	if err != nil {
		t.Fatal(err)
	}
	last := time.Now()
	reading := timesource.Reading{Source: "chrony", Role: timesource.Authoritative, Found: true, Up: true, HasData: true,
		Synchronized: true, ErrorBound: time.Millisecond, LastSuccess: last}
	cfg := DefaultConfig()
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
