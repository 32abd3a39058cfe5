package daemon

import (
	"context"
	"io"
	"log/slog"
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

// TestStepWhileDownStepsDownFirst restarts clockwatch's step pipeline, its
// announcer and its stepdown socket after the wall clock was stepped while it was down, with a
// client connected before anything was sampled: the client must be told
// unknown, then the stepdown for the step seen at restart, and never ok
// before it (the clocks' evidence reaches the policy only after the first
// sample's events).
func TestStepWhileDownStepsDownFirst(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	scfg := step.DefaultConfig()
	scfg.Interval = 5 * time.Millisecond
	jcfg := journal.Config{Dir: dir, MaxBytes: 1 << 20}
	clocks := &hostclocktest.Clocks{Origin: hostclocktest.HostMonotonic, Start: kernel.Sample{Real: 1_790_000_000 * int64(time.Second)}}
	logger := slog.New(slog.NewTextHandler(io.Discard, nil))

	// A first run persists the wall−boot gap.
	first := NewSteps(scfg, jcfg, clocks, logger)
	ctx, cancel := context.WithCancel(t.Context())
	g, gctx := errgroup.WithContext(ctx)
	for _, task := range first.Tasks() {
		g.Go(func() error { return task(gctx) })
	}
	<-first.Ready()
	time.Sleep(20 * time.Millisecond)
	cancel()
	if err := g.Wait(); err != nil {
		t.Fatal(err)
	}
	clocks.Step(time.Hour) // stepped while clockwatch was down

	steps := NewSteps(scfg, jcfg, clocks, logger)
	cfg := config.DefaultStepdown()
	cfg.Socket = filepath.Join(t.TempDir(), "sd.sock")
	sd, err := newTestStepdown(cfg, steps, timesources.Members{timesources.Kernel(hostclocktest.Disciplined())}, t.TempDir(), FeedOptions{Poll: 10 * time.Millisecond}, logger)
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel = context.WithCancel(t.Context())
	defer cancel()
	g, gctx = errgroup.WithContext(ctx)
	g.Go(func() error { return sd.Server.Run(gctx) })
	c, err := stepdown.Dial(ctx, cfg.Socket)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	read := func() stepdown.Message {
		t.Helper()
		for {
			c.SetReadDeadline(time.Now().Add(10 * time.Second))
			m, err := c.Read()
			if err != nil {
				t.Fatal(err)
			}
			if m.Type != stepdown.TypeHeartbeat {
				return m
			}
		}
	}
	if m := read(); m.Type != stepdown.TypeHello || m.State != stepdown.StateUnknown {
		t.Fatalf("first message %s, want a hello in state unknown", m)
	}
	// Only now the pipeline starts; the feed once the first sample (and
	// the step it saw) is in, so that it finds both the step event and
	// the sampler ready.
	for _, task := range steps.Tasks() {
		g.Go(func() error { return task(gctx) })
	}
	<-steps.Ready()
	for _, task := range sd.Tasks()[1:] {
		g.Go(func() error { return task(gctx) })
	}
	m := read()
	t.Logf("after the hello: %s", m)
	if m.Type != stepdown.TypeStepdown || m.Reason != stepdown.ReasonStep || m.Source != "restart" || *m.StepSeconds != 3600 {
		t.Errorf("first event %s, want the stepdown for the +1h step seen at restart", m)
	}
	cancel()
	if err := g.Wait(); err != nil {
		t.Fatal(err)
	}
}
