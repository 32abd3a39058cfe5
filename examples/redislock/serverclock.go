package redislock

import (
	"context"
	"fmt"
	"sync"

	"github.com/clockwatch/clockwatch/stepdown"
)

// ServerClock tells a lock holder whether the clock of its lock server's
// node can still be trusted: *PeerWatch, on clockwatch's peer watch.
type ServerClock interface {
	// Guard returns a context cancelled, with a *ServerClockError cause,
	// the moment the lock server's clock steps or stops being trusted; it
	// is cancelled already if that clock is not trusted now. Call the
	// CancelFunc when the job ends.
	Guard(parent context.Context) (context.Context, context.CancelFunc)
	// Trusted reports whether the lock server's clock is trusted now.
	Trusted() bool
}

var _ ServerClock = (*PeerWatch)(nil)

// ServerClockError is why a ServerClock guard was cancelled: what this
// node's clockwatch said of the lock server's clock.
type ServerClockError struct {
	// Peer is the lock server's node, as watched.
	Peer string
	// Message is the peer message that ended the guard (State unknown and
	// Detail saying why when this node's clockwatch was lost).
	Message stepdown.Message
}

func (e *ServerClockError) Error() string {
	m := e.Message
	s := fmt.Sprintf("the clock of the lock server's node %s: %s", e.Peer, m.State)
	if m.Reason != "" {
		s += " (" + string(m.Reason) + ")"
	}
	if m.Detail != "" {
		s += ": " + m.Detail
	}
	return s
}

// PeerWatch follows the clock of the node a lock server runs on, through
// this node's clockwatch (watch_peer: that node must be one of this
// clockwatch's peers, see docs/peers.md). Redis keeps a key's expiry as a
// wall-clock time: a forward step on the master's node expires every TTL
// lock at once, and the holders, on other nodes, can only hear of it. The
// news comes with clockwatch's next round of measurements (peers.interval).
type PeerWatch struct {
	peer string

	mu     sync.Mutex
	last   stepdown.Message // the last news of the peer; State "" before any
	guards map[*peerGuard]struct{}
}

type peerGuard struct {
	epoch  uint64 // the peer's clock epoch when the guard began
	cancel context.CancelCauseFunc
}

// WatchPeer subscribes to this node's clockwatch (its stepdown socket,
// stepdown.DefaultSocket if empty) and follows peer's clock until ctx is
// done.
func WatchPeer(ctx context.Context, socket, peer string) *PeerWatch {
	sub := stepdown.Subscribe(ctx, stepdown.Options{Path: socket, WatchPeers: []string{peer}})
	w := &PeerWatch{peer: peer, guards: map[*peerGuard]struct{}{}}
	go func() {
		for ev := range sub.Events() {
			switch {
			case ev.Type == stepdown.TypePeer && ev.Peer == peer:
				w.tell(ev.Message)
			case ev.Type == stepdown.TypeDisconnected:
				w.tell(stepdown.Message{Type: stepdown.TypePeer, Peer: peer, State: stepdown.StateUnknown,
					Epoch: w.Last().Epoch, Detail: "this node's clockwatch is lost: " + ev.Error})
			}
		}
	}()
	return w
}

// Last returns the last news of the peer's clock (State empty before the
// first).
func (w *PeerWatch) Last() stepdown.Message {
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.last
}

// Trusted implements ServerClock.
func (w *PeerWatch) Trusted() bool { return w.Last().State == stepdown.StateOK }

// tell records news of the peer and ends every guard it concerns: the clock
// is no longer trusted, or it stepped (its epoch moved) since the guard
// began.
func (w *PeerWatch) tell(m stepdown.Message) {
	w.mu.Lock()
	defer w.mu.Unlock()
	w.last = m
	for g := range w.guards {
		if m.State != stepdown.StateOK || m.Epoch != g.epoch {
			g.cancel(&ServerClockError{Peer: w.peer, Message: m})
			delete(w.guards, g)
		}
	}
}

// Guard implements ServerClock.
func (w *PeerWatch) Guard(parent context.Context) (context.Context, context.CancelFunc) {
	ctx, cancel := context.WithCancelCause(parent)
	w.mu.Lock()
	defer w.mu.Unlock()
	if w.last.State != stepdown.StateOK {
		m := w.last
		if m.State == "" {
			m.State, m.Detail = stepdown.StateUnknown, "no news of it yet"
		}
		cancel(&ServerClockError{Peer: w.peer, Message: m})
		return ctx, func() {}
	}
	g := &peerGuard{epoch: w.last.Epoch, cancel: cancel}
	w.guards[g] = struct{}{}
	return ctx, func() {
		w.mu.Lock()
		delete(w.guards, g)
		w.mu.Unlock()
		cancel(context.Canceled)
	}
}
