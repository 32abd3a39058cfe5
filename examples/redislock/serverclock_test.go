package redislock

import (
	"context"
	"errors"
	"net"
	"path/filepath"
	"testing"
	"time"

	"github.com/clockwatch/clockwatch/stepdown"
)

// fakeClockwatch is the server end of one stepdown-socket connection: it
// says hello, takes the client's watch_peer and sends the peer messages the
// test gives it. The real daemon is in stepvm's VM test.
type fakeClockwatch struct {
	t      *testing.T
	socket string
	conns  chan *stepdown.Conn
}

func newFakeClockwatch(t *testing.T) *fakeClockwatch {
	t.Helper()
	f := &fakeClockwatch{t: t, socket: filepath.Join(t.TempDir(), "stepdown.sock"), conns: make(chan *stepdown.Conn, 4)}
	l, err := net.Listen("unix", f.socket)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { l.Close() })
	go func() {
		for {
			c, err := l.Accept()
			if err != nil {
				return
			}
			sc := stepdown.NewConn(c)
			if err := sc.Send(stepdown.Message{Type: stepdown.TypeHello, Version: stepdown.Version, State: stepdown.StateOK, HeartbeatSeconds: 10}); err != nil {
				c.Close()
				continue
			}
			f.conns <- sc
		}
	}()
	return f
}

// accept returns the next connection once it has asked to watch peer.
func (f *fakeClockwatch) accept(peer string) *stepdown.Conn {
	f.t.Helper()
	select {
	case c := <-f.conns:
		c.SetReadDeadline(time.Now().Add(5 * time.Second))
		m, err := c.Read()
		if err != nil || m.Type != stepdown.TypeWatchPeer || m.Peer != peer {
			f.t.Fatalf("the client's first request: %+v, %v; want watch_peer %s", m, err, peer)
		}
		return c
	case <-time.After(5 * time.Second):
		f.t.Fatal("no client connected")
	}
	return nil
}

func waitFor(t *testing.T, what string, ok func() bool) {
	t.Helper()
	for deadline := time.Now().Add(5 * time.Second); !ok(); time.Sleep(5 * time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatalf("not within 5 s: %s", what)
		}
	}
}

func cancelledBy(t *testing.T, ctx context.Context) *ServerClockError {
	t.Helper()
	select {
	case <-ctx.Done():
	case <-time.After(5 * time.Second):
		t.Fatal("the guard was not cancelled")
	}
	var e *ServerClockError
	if !errors.As(context.Cause(ctx), &e) {
		t.Fatalf("the guard's cause is %v, want a *ServerClockError", context.Cause(ctx))
	}
	return e
}

func alive(t *testing.T, ctx context.Context) {
	t.Helper()
	if ctx.Err() != nil {
		t.Fatalf("the guard was cancelled: %v", context.Cause(ctx))
	}
}

// TestPeerWatchGuard: the lock server's clock is trusted only while its
// clockwatch says ok; a guard ends when the lock server's clock stops being
// ok, when its epoch moves (a step, even one whose stepdown the watch never
// saw), and when this node's clockwatch is lost; it begins cancelled while
// that clock is not ok or nothing is known of it yet.
func TestPeerWatchGuard(t *testing.T) {
	t.Parallel()
	const peer = "redis-node"
	f := newFakeClockwatch(t)
	w := WatchPeer(t.Context(), f.socket, peer)
	ctx := t.Context()

	if w.Trusted() {
		t.Error("trusted before any news")
	}
	g, stop := w.Guard(ctx)
	if e := cancelledBy(t, g); e.Message.State != stepdown.StateUnknown || e.Peer != peer {
		t.Errorf("before any news: %v, want unknown", e)
	}
	stop()

	c := f.accept(peer)
	send := func(state stepdown.State, reason stepdown.Reason, epoch uint64) {
		t.Helper()
		if err := c.Send(stepdown.Message{Type: stepdown.TypePeer, Peer: peer, State: state, Reason: reason, Epoch: epoch}); err != nil {
			t.Fatal(err)
		}
		waitFor(t, "the watch hearing the news", func() bool { m := w.Last(); return m.State == state && m.Epoch == epoch })
	}
	send(stepdown.StateOK, "", 4)
	if !w.Trusted() {
		t.Error("not trusted when ok")
	}
	g, stop = w.Guard(ctx)
	alive(t, g)
	send(stepdown.StateStepdown, stepdown.ReasonStep, 5)
	if e := cancelledBy(t, g); e.Message.Reason != stepdown.ReasonStep || e.Message.Epoch != 5 {
		t.Errorf("after the step: %v, want the stepdown of epoch 5", e)
	}
	stop()
	if w.Trusted() {
		t.Error("trusted during its stepdown")
	}
	g, stop = w.Guard(ctx)
	if e := cancelledBy(t, g); e.Message.State != stepdown.StateStepdown {
		t.Errorf("during the stepdown: %v", e)
	}
	stop()

	send(stepdown.StateOK, "", 5)
	g, stop = w.Guard(ctx)
	alive(t, g)
	// Stepped and trusted again between two rounds: only the epoch says so.
	send(stepdown.StateOK, "", 6)
	if e := cancelledBy(t, g); e.Message.State != stepdown.StateOK || e.Message.Epoch != 6 {
		t.Errorf("after an unseen step: %v, want ok with epoch 6", e)
	}
	stop()

	g, stop = w.Guard(ctx)
	defer stop()
	alive(t, g)
	c.Close()
	if e := cancelledBy(t, g); e.Message.State != stepdown.StateUnknown {
		t.Errorf("with this node's clockwatch lost: %v, want unknown", e)
	}
}
