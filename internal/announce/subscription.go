package announce

import "sync"

// Subscription is a transport's decoupled view of the announcer: the latest
// state at any time, and each announcement on a buffered channel. The
// announcer never waits for it: an announcement that finds the buffer full
// is dropped for this subscription only (Dropped counts them), so a slow
// transport (a segment write, an API call to a cluster) delays nobody, the
// socket's clients least of all. A transport that must not miss an event
// compares the seq it last handled with Latest().Seq: a gap says events were
// dropped, and Latest says where they left the state.
type Subscription struct {
	a      *Announcer
	name   string
	c      chan Announcement
	detach func()

	mu      sync.Mutex
	open    bool
	dropped uint64
}

// Subscribe starts a subscription named after its transport (for logs and
// tests) with room for buffer announcements (at least 1). Close it when the
// transport stops.
func (a *Announcer) Subscribe(name string, buffer int) *Subscription {
	s := &Subscription{a: a, name: name, c: make(chan Announcement, max(buffer, 1)), open: true}
	s.detach = a.Attach(s.deliver)
	return s
}

// deliver runs in line with the announcer locked: it never blocks.
func (s *Subscription) deliver(an Announcement) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if !s.open {
		return
	}
	select {
	case s.c <- an:
	default:
		s.dropped++
	}
}

// C delivers each announcement made since Subscribe, in sequence order, less
// those dropped. It is closed by Close.
func (s *Subscription) C() <-chan Announcement { return s.c }

// Latest is the announcer's state now: what the transport should show,
// whatever it missed.
func (s *Subscription) Latest() Snapshot { return s.a.Latest() }

// Dropped counts the announcements lost to a full buffer.
func (s *Subscription) Dropped() uint64 {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.dropped
}

// Name is the transport's name given to Subscribe.
func (s *Subscription) Name() string { return s.name }

// Close ends the subscription and closes C. Closing twice is harmless.
func (s *Subscription) Close() {
	s.detach()
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.open {
		s.open = false
		close(s.c)
	}
}
