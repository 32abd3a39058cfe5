// The client library (package stepdown, its own module) against the real
// server: these live on the daemon's side so that the client module needs
// nothing of the daemon to be tested.
package socket_test

import (
	"context"
	"errors"
	"net"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/clockwatch/clockwatch/internal/announce"
	"github.com/clockwatch/clockwatch/internal/policy"
	"github.com/clockwatch/clockwatch/internal/transport/socket"
	"github.com/clockwatch/clockwatch/stepdown"
)

// runServer starts a server on path with the given epoch and returns its
// announcer and stop function.
func runServer(t *testing.T, path string, epoch uint64) (*announce.Announcer, func()) {
	t.Helper()
	cfg := testCfg{socket.DefaultConfig(), policy.DefaultConfig()}
	cfg.Socket = path
	cfg.Heartbeat = 20 * time.Millisecond
	cfg.HoldDown = 50 * time.Millisecond
	s, ann := newServer(t, cfg, socket.Options{}, announce.Options{Epoch: epoch})
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- s.Run(ctx) }()
	<-s.Ready()
	ann.ProbeOK("test")
	stopped := false
	stop := func() {
		if stopped {
			return
		}
		stopped = true
		cancel()
		if err := <-done; err != nil {
			t.Errorf("Run: %v", err)
		}
	}
	t.Cleanup(stop)
	return ann, stop
}

func waitEvent(t *testing.T, sub *stepdown.Subscription, typ string) stepdown.Event {
	t.Helper()
	timeout := time.After(10 * time.Second)
	for {
		select {
		case e := <-sub.Events():
			if e.Type == typ {
				return e
			}
		case <-timeout:
			t.Fatalf("no %s event", typ)
		}
	}
}

func TestSubscribeGuardAndRestart(t *testing.T) {
	t.Parallel()
	path := filepath.Join(t.TempDir(), "sd.sock")
	ann, stop := runServer(t, path, 7)
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	sub := stepdown.Subscribe(ctx, stepdown.Options{Path: path, MinBackoff: 10 * time.Millisecond, MaxBackoff: 40 * time.Millisecond})
	if err := sub.WaitOK(ctx); err != nil {
		t.Fatal(err)
	}
	if e := waitEvent(t, sub, stepdown.TypeHello); e.Epoch != 7 || e.State != stepdown.StateOK {
		t.Fatalf("hello %+v", e)
	}

	// A stepdown cancels the guard with the event as its cause.
	guarded, release := sub.Guard(ctx)
	defer release()
	ann.Step(policy.Step{Seconds: -3, Epoch: 8})
	<-guarded.Done()
	var sde *stepdown.StepdownError
	if !errors.As(context.Cause(guarded), &sde) || sde.State != stepdown.StateStepdown || sde.Message.Reason != stepdown.ReasonStep || *sde.Message.StepSeconds != -3 {
		t.Fatalf("cause %v", context.Cause(guarded))
	}
	if err := sub.Ack(sde.Message.Seq); err != nil {
		t.Fatal(err)
	}
	// A guard taken while in stepdown is cancelled at once.
	if g, rel := sub.Guard(ctx); g.Err() == nil {
		t.Fatal("guard not cancelled during stepdown")
	} else {
		rel()
	}
	if err := sub.WaitOK(ctx); err != nil {
		t.Fatal(err)
	}

	// The daemon restarts: the guard ends (state unknown), the subscription
	// reconnects and the hello carries the persisted epoch.
	guarded, release2 := sub.Guard(ctx)
	defer release2()
	stop()
	<-guarded.Done()
	if !errors.As(context.Cause(guarded), &sde) || sde.State != stepdown.StateUnknown {
		t.Fatalf("cause after the daemon stopped: %v", context.Cause(guarded))
	}
	waitEvent(t, sub, stepdown.TypeDisconnected)
	runServer(t, path, 8)
	if e := waitEvent(t, sub, stepdown.TypeHello); e.Epoch != 8 {
		t.Fatalf("hello after restart: %+v", e)
	}
	if err := sub.WaitOK(ctx); err != nil {
		t.Fatal(err)
	}
	cancel()
	<-sub.Done()
	if st, _ := sub.State(); st != stepdown.StateUnknown {
		t.Errorf("state after the end: %s", st)
	}
}

func TestHeartbeatTimeoutMakesStateUnknown(t *testing.T) {
	t.Parallel()
	path := filepath.Join(t.TempDir(), "silent.sock")
	l, err := net.Listen("unix", path)
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	go func() {
		for {
			c, err := l.Accept()
			if err != nil {
				return
			}
			// A hello promising 10 ms heartbeats, then silence.
			c.Write(stepdown.Message{Type: stepdown.TypeHello, Version: 1, State: stepdown.StateOK, HeartbeatSeconds: 0.01}.AppendLine(nil))
			defer c.Close()
		}
	}()
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	sub := stepdown.Subscribe(ctx, stepdown.Options{Path: path, MinBackoff: time.Second})
	if err := sub.WaitOK(ctx); err != nil {
		t.Fatal(err)
	}
	g, rel := sub.Guard(ctx)
	defer rel()
	<-g.Done()
	e := waitEvent(t, sub, stepdown.TypeDisconnected)
	if !strings.Contains(e.Err.Error(), "timeout") {
		t.Errorf("disconnect error %v, want a timeout", e.Err)
	}
}
