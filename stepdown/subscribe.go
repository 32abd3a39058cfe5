package stepdown

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"sync"
	"time"
)

// TypeDisconnected is the Type of the Event a Subscription delivers when it
// loses the server (connection closed, heartbeats stopped, or no server). It
// never appears on the wire.
const TypeDisconnected = "disconnected"

// Options configure Subscribe. The zero value is usable.
type Options struct {
	// Path is the socket (DefaultSocket if empty).
	Path string
	// HeartbeatTimeout is how long without any message before the server
	// is presumed dead and the state becomes unknown. Zero means three
	// heartbeat intervals as announced in the server's hello.
	HeartbeatTimeout time.Duration
	// MinBackoff and MaxBackoff bound the jittered exponential delay between
	// reconnection attempts (100 ms and 5 s if zero).
	MinBackoff, MaxBackoff time.Duration
	// EventBuffer is the capacity of Events (64 if zero). Events that do not
	// fit are dropped and counted in Subscription.Dropped; the state and
	// guards never depend on Events being read.
	EventBuffer int
	// Heartbeats delivers heartbeat messages on Events too.
	Heartbeats bool
	// WatchPeers names peers (other nodes' clockwatch that this node's
	// measures: a name as its metrics show it, an IP:port or an IP) whose
	// clocks to follow: after each hello the subscription asks for them
	// (watch_peer), delivers their peer messages on Events and keeps their
	// state (PeerState). Their state does not change the local one.
	WatchPeers []string
}

// Event is what a Subscription delivers: a message from the server, or a
// TypeDisconnected event with Err set.
type Event struct {
	Message
	// Err is why the connection was lost (TypeDisconnected only).
	Err error
}

// StepdownError is the cause of a Guard's cancellation.
type StepdownError struct {
	// State is the state that ended the guard: stepdown or unknown.
	State State
	// Message is the message that changed the state (zero when the
	// connection was lost).
	Message Message
	// Err is why the state is unknown, if it is.
	Err error
}

func (e *StepdownError) Error() string {
	if e.State == StateUnknown {
		return fmt.Sprintf("clock state unknown: %v", e.Err)
	}
	s := fmt.Sprintf("clock cannot be trusted: %s (reason %s, seq %d)", e.State, e.Message.Reason, e.Message.Seq)
	if e.Message.Drill {
		s += " [drill]"
	}
	return s
}

// Subscription follows the state clockwatch announces, reconnecting as
// needed. Its methods are safe for concurrent use.
type Subscription struct {
	opts   Options
	events chan Event
	done   chan struct{}

	mu      sync.Mutex
	state   State
	last    Message // the message that set the state
	lastErr error
	conn    *Conn
	guards  map[*guard]struct{}
	changed chan struct{} // closed at each state change
	dropped uint64
	// peers is each watched peer's last peer message.
	peers map[string]Message
}

type guard struct{ cancel context.CancelCauseFunc }

// Subscribe connects to clockwatch and follows its state until ctx is done.
// The state is unknown until the first hello arrives.
func Subscribe(ctx context.Context, opts Options) *Subscription {
	if opts.Path == "" {
		opts.Path = DefaultSocket
	}
	if opts.MinBackoff <= 0 {
		opts.MinBackoff = 100 * time.Millisecond
	}
	if opts.MaxBackoff < opts.MinBackoff {
		opts.MaxBackoff = max(5*time.Second, opts.MinBackoff)
	}
	if opts.EventBuffer <= 0 {
		opts.EventBuffer = 64
	}
	s := &Subscription{
		opts: opts, events: make(chan Event, opts.EventBuffer), done: make(chan struct{}),
		state: StateUnknown, lastErr: errors.New("not connected yet"),
		guards: map[*guard]struct{}{}, changed: make(chan struct{}), peers: map[string]Message{},
	}
	go s.run(ctx)
	return s
}

// Events delivers what happens, in order. It is closed when the
// subscription ends.
func (s *Subscription) Events() <-chan Event { return s.events }

// Done is closed when the subscription has ended (its context is done).
func (s *Subscription) Done() <-chan struct{} { return s.done }

// Dropped is how many events did not fit in Events.
func (s *Subscription) Dropped() uint64 {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.dropped
}

// State returns the current state and the message that set it.
func (s *Subscription) State() (State, Message) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.state, s.last
}

// PeerState returns the state of a watched peer's clock (Options.WatchPeers)
// and the peer message that said it: unknown until the first, and whenever
// the connection to the local clockwatch is lost.
func (s *Subscription) PeerState(peer string) (State, Message) {
	s.mu.Lock()
	defer s.mu.Unlock()
	m, ok := s.peers[peer]
	if !ok {
		return StateUnknown, Message{}
	}
	return m.State, m
}

// WaitOK blocks until the state is ok or ctx is done.
func (s *Subscription) WaitOK(ctx context.Context) error {
	for {
		s.mu.Lock()
		st, ch := s.state, s.changed
		s.mu.Unlock()
		if st == StateOK {
			return nil
		}
		select {
		case <-ch:
		case <-ctx.Done():
			return context.Cause(ctx)
		case <-s.done:
			return errors.New("stepdown subscription ended")
		}
	}
}

// Guard returns a context that is cancelled, with a *StepdownError cause, the
// moment the state stops being ok: at the first stepdown, or when the server
// is lost. If the state is not ok already, the context is returned cancelled.
// A lock holder runs its critical section under this context and releases the
// lock when it is done. Call the CancelFunc when the section ends.
func (s *Subscription) Guard(parent context.Context) (context.Context, context.CancelFunc) {
	ctx, cancel := context.WithCancelCause(parent)
	g := &guard{cancel: cancel}
	s.mu.Lock()
	if s.state != StateOK {
		cancel(s.causeLocked())
	} else {
		s.guards[g] = struct{}{}
	}
	s.mu.Unlock()
	return ctx, func() {
		s.mu.Lock()
		delete(s.guards, g)
		s.mu.Unlock()
		cancel(context.Canceled)
	}
}

// Ack acknowledges the event with seq on the current connection.
func (s *Subscription) Ack(seq uint64) error {
	s.mu.Lock()
	c := s.conn
	s.mu.Unlock()
	if c == nil {
		return errors.New("acking stepdown event: not connected")
	}
	return c.Ack(seq)
}

func (s *Subscription) causeLocked() error {
	return &StepdownError{State: s.state, Message: s.last, Err: s.lastErr}
}

// setLocked moves to state st, cancelling the guards when it is not ok.
func (s *Subscription) setLocked(st State, m Message, err error) {
	changed := st != s.state
	s.state, s.last, s.lastErr = st, m, err
	if st != StateOK {
		cause := s.causeLocked()
		for g := range s.guards {
			g.cancel(cause)
			delete(s.guards, g)
		}
	}
	if changed {
		close(s.changed)
		s.changed = make(chan struct{})
	}
}

func (s *Subscription) deliverLocked(e Event) {
	select {
	case s.events <- e:
	default:
		s.dropped++
	}
}

func (s *Subscription) run(ctx context.Context) {
	defer func() {
		s.mu.Lock()
		s.setLocked(StateUnknown, Message{}, errors.New("subscription ended"))
		close(s.events)
		close(s.done)
		s.mu.Unlock()
	}()
	backoff := s.opts.MinBackoff
	for ctx.Err() == nil {
		gotHello, err := s.session(ctx)
		if ctx.Err() != nil {
			return
		}
		if gotHello {
			backoff = s.opts.MinBackoff
		}
		s.mu.Lock()
		s.conn = nil
		clear(s.peers)
		s.setLocked(StateUnknown, Message{}, err)
		s.deliverLocked(Event{Message: Message{Type: TypeDisconnected, State: StateUnknown, Error: err.Error()}, Err: err})
		s.mu.Unlock()
		// Full jitter over [backoff/2, backoff) spreads the reconnections of
		// many clients after a daemon restart.
		d := backoff/2 + rand.N(backoff/2+1)
		// Doubled only while that stays under the longest: 2*backoff
		// wraps negative for a MaxBackoff over 146 years.
		if backoff > s.opts.MaxBackoff/2 {
			backoff = s.opts.MaxBackoff
		} else {
			backoff *= 2
		}
		t := time.NewTimer(d)
		select {
		case <-ctx.Done():
			t.Stop()
			return
		case <-t.C:
		}
	}
}

// session runs one connection until it fails.
func (s *Subscription) session(ctx context.Context) (gotHello bool, err error) {
	c, err := Dial(ctx, s.opts.Path)
	if err != nil {
		return false, err
	}
	defer c.Close()
	stop := context.AfterFunc(ctx, func() { c.Close() })
	defer stop()
	timeout := s.opts.HeartbeatTimeout
	if timeout == 0 {
		timeout = 5 * time.Second // until the hello says better
	}
	s.mu.Lock()
	s.conn = c
	s.mu.Unlock()
	for {
		c.SetReadDeadline(time.Now().Add(timeout))
		m, err := c.Read()
		if err != nil {
			return gotHello, fmt.Errorf("stepdown server lost: %w", err)
		}
		s.mu.Lock()
		switch m.Type {
		case TypeHello:
			gotHello = true
			if s.opts.HeartbeatTimeout == 0 && m.HeartbeatSeconds > 0 {
				timeout = time.Duration(3 * m.HeartbeatSeconds * float64(time.Second))
			}
			s.setLocked(m.State, m, nil)
		case TypePeer:
			s.peers[m.Peer] = m
		case TypeStepdown, TypeResume:
			s.setLocked(m.State, m, nil)
		case TypeHeartbeat:
			if m.State != s.state {
				s.setLocked(m.State, m, nil)
			}
		}
		if m.Type != TypeHeartbeat || s.opts.Heartbeats {
			s.deliverLocked(Event{Message: m})
		}
		s.mu.Unlock()
		if m.Type == TypeHello {
			// Asked again on every connection: a watch ends with it.
			for _, p := range s.opts.WatchPeers {
				if err := c.WatchPeer(p); err != nil {
					return gotHello, err
				}
			}
		}
	}
}
