package announce

import (
	"sync/atomic"
)

// Delivery says how a Subscription receives what the announcer decides:
// on a buffered channel (the default), or in line.
type Delivery struct {
	// Buffer is how many announcements C holds (at least 1) for a
	// transport that reads them in its own goroutine. The announcer never
	// waits for it: an announcement that finds the buffer full is dropped
	// for this subscription only (Dropped counts them).
	Buffer int
	// InLine, when set, receives every Update in line instead of C (which
	// is then nil): first the state at Subscribe, before Subscribe
	// returns, then each update in sequence order, from the goroutine that
	// fed the announcer, before that input returns. It runs without the
	// announcer's lock (it may read Latest) but before the next update,
	// so it must not block (queue and return) and must not feed the
	// announcer (Step, Tick, Drill, SetConfig...), subscribe or Close:
	// those wait for the turn it holds. It is for a transport whose delivery is itself a
	// non-blocking hand-off to queues of its own (the socket's fan-out),
	// for which the latency of a goroutine switch matters.
	InLine func(Update)
}

// Buffered is the Delivery of a transport that reads C.
func Buffered(n int) Delivery { return Delivery{Buffer: n} }

// InLine is the Delivery of a transport whose f takes every Update in line.
func InLine(f func(Update)) Delivery { return Delivery{InLine: f} }

// Update is what an in-line subscription gets: the announcements made since
// the last update, and the state they left.
type Update struct {
	// Announcements are in sequence order, with no gap: empty for the
	// first update (the state at Subscribe) and when the state changed
	// without an announcement (a new epoch while in stepdown, a reloaded
	// hold-down).
	Announcements []Announcement
	// Snapshot is the state after them; its Seq is the last one's.
	Snapshot Snapshot
}

// Subscription is a transport's attachment to the announcer, the only one:
// every transport subscribes, and its Delivery says whether it reads
// announcements on a buffered channel (C) or takes every Update in line.
// Latest is the state at any time. A transport that must not miss an event
// compares the seq it last handled with Latest().Seq: a gap says events were
// dropped, and Latest says where they left the state.
type Subscription struct {
	a      *Announcer
	name   string
	c      chan Announcement
	inline func(Update)

	// open is read and written only in a hand-off's turn.
	open    bool
	dropped atomic.Uint64
}

// Subscribe attaches a transport, named for logs and tests, with the
// Delivery it asks for. Close it when the transport stops.
func (a *Announcer) Subscribe(name string, d Delivery) *Subscription {
	s := &Subscription{a: a, name: name, inline: d.InLine, open: true}
	if s.inline == nil {
		s.c = make(chan Announcement, max(d.Buffer, 1))
	}
	a.mu.Lock()
	a.subs = append(a.subs[:len(a.subs):len(a.subs)], s)
	snap := a.snapshotLocked()
	a.handOff(func() {
		if s.inline != nil {
			s.inline(Update{Snapshot: snap})
		}
	})
	return s
}

// deliver hands u to the transport; it runs in a hand-off's turn and
// never blocks (a channel send that finds the buffer full is dropped).
func (s *Subscription) deliver(u Update) {
	if !s.open {
		return
	}
	if s.inline != nil {
		s.inline(u)
		return
	}
	for _, an := range u.Announcements {
		select {
		case s.c <- an:
		default:
			s.dropped.Add(1)
		}
	}
}

// C delivers each announcement made since Subscribe, in sequence order, less
// those dropped; nil for an in-line subscription. It is closed by Close.
func (s *Subscription) C() <-chan Announcement { return s.c }

// Latest is the announcer's state now: what the transport should show,
// whatever it missed.
func (s *Subscription) Latest() Snapshot { return s.a.Latest() }

// Dropped counts the announcements lost to a full buffer.
func (s *Subscription) Dropped() uint64 { return s.dropped.Load() }

// Name is the transport's name given to Subscribe.
func (s *Subscription) Name() string { return s.name }

// Close ends the subscription: once it returns nothing more is delivered,
// and C is closed. Closing twice is harmless.
func (s *Subscription) Close() {
	a := s.a
	a.mu.Lock()
	if i := indexOf(a.subs, s); i >= 0 {
		subs := make([]*Subscription, 0, len(a.subs)-1)
		a.subs = append(append(subs, a.subs[:i]...), a.subs[i+1:]...)
	}
	a.handOff(func() {
		if s.open {
			s.open = false
			if s.c != nil {
				close(s.c)
			}
		}
	})
}

func indexOf(subs []*Subscription, s *Subscription) int {
	for i, o := range subs {
		if o == s {
			return i
		}
	}
	return -1
}

// Subscribable is what a transport needs of the announcer: the one way to attach.
// *Announcer is one; a transport's constructor takes it and subscribes
// there, so that no announcement made after the start is missed.
type Subscribable interface {
	Subscribe(transport string, d Delivery) *Subscription
}

var _ Subscribable = (*Announcer)(nil)
