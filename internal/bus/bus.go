package bus

import (
	"slices"
	"sync"
	"sync/atomic"
)

// Bus delivers values of type T to subscribers. Publish never blocks on a
// subscriber; it holds a read lock only while offering the value, which is
// taken exclusively only to add or remove a subscriber.
type Bus[T any] struct {
	mu      sync.RWMutex
	subs    []*Subscription[T]
	dropped atomic.Uint64
}

// New returns an empty Bus.
func New[T any]() *Bus[T] { return &Bus[T]{} }

// Subscription is one subscriber's end of the bus.
type Subscription[T any] struct {
	bus     *Bus[T]
	ch      chan T
	dropped atomic.Uint64
	closed  bool // guarded by bus.mu
}

// Subscribe adds a subscriber with a buffer of size values (at least 1).
func (b *Bus[T]) Subscribe(size int) *Subscription[T] {
	s := &Subscription[T]{bus: b, ch: make(chan T, max(size, 1))}
	b.mu.Lock()
	defer b.mu.Unlock()
	b.subs = append(b.subs, s)
	return s
}

// Publish offers v to every subscriber. A subscriber whose buffer is full
// misses it; the miss is counted on the subscriber and on the bus.
func (b *Bus[T]) Publish(v T) {
	b.mu.RLock()
	defer b.mu.RUnlock()
	for _, s := range b.subs {
		select {
		case s.ch <- v:
		default:
			s.dropped.Add(1)
			b.dropped.Add(1)
		}
	}
}

// Dropped returns how many deliveries were dropped, over all subscribers.
func (b *Bus[T]) Dropped() uint64 { return b.dropped.Load() }

// Subscribers returns the current number of subscribers.
func (b *Bus[T]) Subscribers() int {
	b.mu.RLock()
	defer b.mu.RUnlock()
	return len(b.subs)
}

// C returns the channel the subscriber receives on. Close closes it, after
// the values still buffered.
func (s *Subscription[T]) C() <-chan T { return s.ch }

// Dropped returns how many values this subscriber missed because its buffer
// was full.
func (s *Subscription[T]) Dropped() uint64 { return s.dropped.Load() }

// Close removes the subscriber and closes its channel. It is safe to call
// more than once.
func (s *Subscription[T]) Close() {
	b := s.bus
	b.mu.Lock()
	defer b.mu.Unlock()
	if s.closed {
		return
	}
	s.closed = true
	b.subs = slices.DeleteFunc(b.subs, func(x *Subscription[T]) bool { return x == s })
	close(s.ch)
}
