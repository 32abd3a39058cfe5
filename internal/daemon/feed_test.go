package daemon

import (
	"context"
	"io"
	"log/slog"
	"path/filepath"
	"sync/atomic"
	"testing"
	"time"

	"golang.org/x/sync/errgroup"

	"github.com/clockwatch/clockwatch/internal/announce"
	"github.com/clockwatch/clockwatch/internal/config"
	"github.com/clockwatch/clockwatch/internal/host"
	"github.com/clockwatch/clockwatch/internal/hostclock/hostclocktest"
	"github.com/clockwatch/clockwatch/internal/journal"
	"github.com/clockwatch/clockwatch/internal/pulse"
	"github.com/clockwatch/clockwatch/internal/step"
	"github.com/clockwatch/clockwatch/internal/timesources"
	"github.com/clockwatch/clockwatch/internal/transport/socket"
)

// TestFeedFollowsPolls: with chrony the only source with news, the policy is
// fed after each poll of chronyd and at least every MaxQuiet, not every
// Poll; every Poll once Periodic says a source needs it.
func TestFeedFollowsPolls(t *testing.T) {
	t.Parallel()
	scfg := step.DefaultConfig()
	scfg.Interval = 5 * time.Millisecond
	logger := slog.New(slog.NewTextHandler(io.Discard, nil))
	steps := NewSteps(scfg, journal.Config{Dir: t.TempDir(), MaxBytes: 1 << 20}, &hostclocktest.Clocks{Origin: hostclocktest.HostMonotonic}, logger)
	cfg := config.DefaultStepdown()
	cfg.Socket = filepath.Join(t.TempDir(), "sd.sock")
	tx := hostclocktest.Disciplined()
	polled := make(chan struct{}, 1)
	var periodic atomic.Bool
	const maxQuiet = 400 * time.Millisecond
	sd, err := newTestStepdown(cfg, steps, timesources.Members{timesources.Kernel(tx)}, "", FeedOptions{Poll: 10 * time.Millisecond, Polled: polled,
		Periodic: periodic.Load, MaxQuiet: maxQuiet}, logger)
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(t.Context())
	g, gctx := errgroup.WithContext(ctx)
	for _, task := range append(steps.Tasks(), sd.Tasks()...) {
		g.Go(func() error { return task(gctx) })
	}
	defer func() {
		cancel()
		if err := g.Wait(); err != nil {
			t.Error(err)
		}
	}()
	wait := func(what string, cond func() bool) {
		t.Helper()
		for deadline := time.Now().Add(10 * time.Second); !cond(); time.Sleep(2 * time.Millisecond) {
			if time.Now().After(deadline) {
				t.Fatalf("timed out waiting for %s", what)
			}
		}
	}
	wait("the start", func() bool { return !sd.Ann.Starting() })
	n0 := tx.Reads()
	time.Sleep(maxQuiet / 4)
	if n := tx.Reads(); n != n0 {
		t.Errorf("%d feeds in %s with nothing new", n-n0, maxQuiet/4)
	}
	polled <- struct{}{}
	wait("a feed after chronyd's poll", func() bool { return tx.Reads() == n0+1 })
	wait("a feed after max_quiet", func() bool { return tx.Reads() >= n0+2 })
	// A source that starts to have news of its own (a ptp4l found) is
	// fed every Poll from the pulse's next look, at most pulse.Rest away.
	periodic.Store(true)
	n1 := tx.Reads()
	wait("the pulse's look", func() bool { return tx.Reads() > n1+1 })
	n1 = tx.Reads()
	time.Sleep(200 * time.Millisecond)
	if n := tx.Reads() - n1; n < 5 {
		t.Errorf("%d feeds in 200 ms at a 10 ms poll with Periodic set", n)
	}
}

// testStepdown is the announcer, its feed and the stepdown socket, as Run
// wires them with stepdown.enabled: true.
type testStepdown struct {
	Server *socket.Server
	Ann    *announce.Announcer
	Feed   *Feed
	// Pulse times the feed and the heartbeat (fo.Pulse, or one of the
	// test's own).
	Pulse *pulse.Pulse
}

func newTestStepdown(cfg config.Stepdown, steps *Steps, sources timesources.Members, stateDir string, fo FeedOptions, logger *slog.Logger) (*testStepdown, error) {
	ann := NewAnnouncer(cfg.Policy, steps, sources, stateDir, logger)
	if fo.Pulse == nil {
		fo.Pulse = pulse.New()
	}
	srv, err := NewStepdownSocket(cfg.Config, ann, fo.Pulse, host.Env{}, logger, nil, nil)
	if err != nil {
		return nil, err
	}
	fo.Subscribers = srv.Subscribers
	return &testStepdown{Server: srv, Ann: ann, Feed: NewFeed(ann, steps, sources, fo, logger), Pulse: fo.Pulse}, nil
}

// Tasks are the socket, then the feed, then the pulse.
func (s *testStepdown) Tasks() []func(context.Context) error {
	return append([]func(context.Context) error{s.Server.Run}, append(s.Feed.Tasks(), s.Pulse.Run)...)
}

// TestSeenBy: every way the detector sees a step reaches the policy under
// the same name (the stepdown event's source on the wire, the journal's
// "seen").
func TestSeenBy(t *testing.T) {
	t.Parallel()
	n := 0
	for s := step.Seen(1); s.String() != "unknown"; s++ {
		if got := seenBy(s); got.String() != s.String() || got == 0 {
			t.Errorf("step.Seen %s reaches the policy as %q", s, got)
		}
		n++
	}
	if n != 4 {
		t.Errorf("%d ways to see a step, want 4 (sampling, clock_set, both, restart)", n)
	}
}
