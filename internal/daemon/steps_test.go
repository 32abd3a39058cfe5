package daemon

import (
	"context"
	"io"
	"log/slog"
	"strings"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus/testutil"
	"golang.org/x/sync/errgroup"

	"github.com/clockwatch/clockwatch/internal/hostclock/hostclocktest"
	"github.com/clockwatch/clockwatch/internal/journal"
	"github.com/clockwatch/clockwatch/internal/kernel"
	"github.com/clockwatch/clockwatch/internal/step"
)

func TestStepsPipeline(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	cfg := step.DefaultConfig()
	cfg.Interval = 5 * time.Millisecond
	// The fake clocks step without a clock-set mark, so only sampling sees
	// it: at the idle interval while the real watcher watches.
	cfg.IdleInterval = 50 * time.Millisecond
	jcfg := journal.Config{Dir: dir, MaxBytes: 1 << 20}
	clocks := &hostclocktest.Clocks{Start: kernel.Sample{Real: 1_790_000_000 * int64(time.Second), Window: 1000}}
	logger := slog.New(slog.NewTextHandler(io.Discard, nil))

	s := NewSteps(cfg, jcfg, clocks, logger)
	sub := s.Bus.Subscribe(8) // as the stepdown feed does
	defer sub.Close()
	ctx, cancel := context.WithCancel(t.Context())
	g, gctx := errgroup.WithContext(ctx)
	for _, task := range s.Tasks() {
		g.Go(func() error { return task(gctx) })
	}
	<-s.Ready()
	clocks.Step(-12400 * time.Millisecond)
	var e step.Event
	select {
	case e = <-sub.C():
	case <-time.After(10 * time.Second):
		t.Fatal("no event on the bus 10s after the step")
	}
	if e.Type != step.TypeStep || e.Step != -12400*time.Millisecond || e.Epoch != 1 {
		t.Errorf("event = %+v, want a -12.4 s step in epoch 1", e)
	}
	// The journal persists it.
	for deadline := time.Now().Add(10 * time.Second); ; time.Sleep(5 * time.Millisecond) {
		recs, _, _ := journal.Read(dir, time.Time{})
		if len(recs) == 1 {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("journal has %d records after 10s, want 1", len(recs))
		}
	}
	cancel()
	if err := g.Wait(); err != nil {
		t.Fatalf("tasks ended with %v", err)
	}
	want := `
# HELP clockwatch_clock_epoch Clock epoch: the number of wall-clock discontinuities, persisted across restarts; it never goes back.
# TYPE clockwatch_clock_epoch gauge
clockwatch_clock_epoch 1
# HELP clockwatch_journal_persistence_ok 1 when step events and the clock epoch are persisted under the state directory, 0 when clockwatch runs without persistence.
# TYPE clockwatch_journal_persistence_ok gauge
clockwatch_journal_persistence_ok 1
`
	if err := testutil.CollectAndCompare(s.Collector, strings.NewReader(want), step.MetricEpoch, step.MetricJournalPersistence); err != nil {
		t.Error(err)
	}

	// A restart continues the epoch from the journal, and a step made while
	// clockwatch was down is reported by the first sample.
	s2 := NewSteps(cfg, jcfg, clocks, logger)
	if st := s2.Journal.State(); st.Epoch != 1 || st.Seq != 1 || st.GapBoot == 0 {
		t.Errorf("after restart the journal state is %+v, want epoch 1 seq 1 and a saved gap", st)
	}
	clocks.Step(time.Hour)
	sub2 := s2.Bus.Subscribe(8)
	defer sub2.Close()
	ctx2, cancel2 := context.WithCancel(t.Context())
	g2, gctx2 := errgroup.WithContext(ctx2)
	for _, task := range s2.Tasks() {
		g2.Go(func() error { return task(gctx2) })
	}
	select {
	case e = <-sub2.C():
	case <-time.After(10 * time.Second):
		t.Fatal("no event for the step made while down")
	}
	cancel2()
	if err := g2.Wait(); err != nil {
		t.Fatal(err)
	}
	if e.Type != step.TypeStep || e.Seen != step.SeenRestart || e.Step != time.Hour || e.Epoch != 2 || e.Seq != 2 {
		t.Errorf("event = %+v, want a +1h step seen at restart, epoch 2 seq 2", e)
	}
}
