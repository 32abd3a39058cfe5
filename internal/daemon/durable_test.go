package daemon

import (
	"context"
	"io"
	"log/slog"
	"os"
	"path/filepath"
	"testing"
	"time"

	"golang.org/x/sync/errgroup"

	"github.com/clockwatch/clockwatch/internal/config"
	"github.com/clockwatch/clockwatch/internal/hostclock/hostclocktest"
	"github.com/clockwatch/clockwatch/internal/journal"
	"github.com/clockwatch/clockwatch/internal/kernel"
	"github.com/clockwatch/clockwatch/internal/step"
	"github.com/clockwatch/clockwatch/internal/timesources"
	"github.com/clockwatch/clockwatch/stepdown"
)

// An event reaches the announcer's feed only once the journal holds
// it: what clients are told survives a crash.
func TestDurableEventsFollowTheJournal(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	cfg := step.DefaultConfig()
	cfg.Interval = 5 * time.Millisecond
	cfg.IdleInterval = 50 * time.Millisecond // the fake step has no clock-set mark
	clocks := &hostclocktest.Clocks{Start: kernel.Sample{Real: 1_790_000_000 * int64(time.Second), Window: 1000}}
	s := NewSteps(cfg, journal.Config{Dir: dir, MaxBytes: 1 << 20}, clocks, slog.New(slog.DiscardHandler))
	sub := s.Durable.Subscribe(8)
	defer sub.Close()
	ctx, cancel := context.WithCancel(t.Context())
	g, gctx := errgroup.WithContext(ctx)
	for _, task := range s.Tasks() {
		g.Go(func() error { return task(gctx) })
	}
	<-s.Ready()
	clocks.Step(-12400 * time.Millisecond)
	select {
	case e := <-sub.C():
		recs, _, err := journal.Read(dir, time.Time{})
		if err != nil || len(recs) != 1 || recs[0].Event.Seq != e.Seq {
			t.Errorf("event seq %d forwarded while the journal holds %d records (%v): not durable yet", e.Seq, len(recs), err)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("no durable event 10s after the step")
	}
	cancel()
	if err := g.Wait(); err != nil {
		t.Fatal(err)
	}
}

// With the state directory unwritable (full, read-only, or a file in the
// way), the epoch announced cannot be made durable: the announcer's policy
// counts the journal as a lost probe, so clients are not told to trust
// fencing tokens built on it.
func TestUnpersistedEpochIsNotVouchedFor(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	blocker := filepath.Join(dir, "file")
	if err := os.WriteFile(blocker, nil, 0o600); err != nil {
		t.Fatal(err)
	}
	cfg := step.DefaultConfig()
	cfg.Interval = 5 * time.Millisecond
	cfg.IdleInterval = 50 * time.Millisecond // the fake step has no clock-set mark
	clocks := &hostclocktest.Clocks{Start: kernel.Sample{Real: 1_790_000_000 * int64(time.Second), Window: 1000}}
	logger := slog.New(slog.NewTextHandler(io.Discard, nil))
	s := NewSteps(cfg, journal.Config{Dir: filepath.Join(blocker, "state"), MaxBytes: 1 << 20}, clocks, logger)
	if s.Journal.Persistent() {
		t.Fatal("journal under a regular file claims to persist")
	}
	scfg := config.DefaultStepdown()
	scfg.Socket = filepath.Join(dir, "sd.sock")
	scfg.Policy.HoldDown = 10 * time.Millisecond
	scfg.Policy.Triggers.ProbeLost.Grace = 20 * time.Millisecond
	sd, err := newTestStepdown(scfg, s, timesources.Members{timesources.Kernel(&hostclocktest.Timex{})}, "", FeedOptions{Poll: 10 * time.Millisecond}, logger)
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(t.Context())
	defer cancel()
	g, gctx := errgroup.WithContext(ctx)
	for _, task := range append(s.Tasks(), sd.Tasks()...) {
		g.Go(func() error { return task(gctx) })
	}
	for deadline := time.Now().Add(10 * time.Second); ; time.Sleep(5 * time.Millisecond) {
		st := sd.Ann.Latest().Status
		if st.State == stepdown.StateStepdown && st.Reason == stepdown.ReasonProbeLost {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("status %+v 10s after start without persistence, want stepdown probe_lost", st)
		}
	}
	cancel()
	if err := g.Wait(); err != nil {
		t.Fatal(err)
	}
}
