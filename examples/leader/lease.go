package leader

import (
	"sync"
	"time"
)

// leaseView is what a node believes about its own lease: it holds the lease
// until TTL after the last renewal etcd confirmed. Which clock measures that
// is the whole point of the incident.
type leaseView struct {
	clock LeaseClock
	wall  Clock
	ttl   time.Duration

	mu       sync.Mutex
	lastWall time.Time // the node's wall clock at the last renewal
	lastMono time.Time // time.Now() (monotonic) at the last renewal
	lost     bool      // etcd's client gave up on the lease
}

func newLeaseView(clock LeaseClock, wall Clock, ttl time.Duration) *leaseView {
	v := &leaseView{clock: clock, wall: wall, ttl: ttl}
	v.renewed()
	return v
}

// renewed records a renewal confirmed by etcd.
func (v *leaseView) renewed() {
	w, m := v.wall.Now(), time.Now()
	v.mu.Lock()
	defer v.mu.Unlock()
	v.lastWall, v.lastMono = w, m
}

// markLost records that etcd's client closed the keepalive channel: the lease
// expired or went unanswered for a TTL.
func (v *leaseView) markLost() {
	v.mu.Lock()
	defer v.mu.Unlock()
	v.lost = true
}

// valid reports whether the node believes it still holds the lease.
//
// With the wall clock it behaves like the incident's lock client, which
// computed "lease expires at last renewal + TTL" from currentTimeMillis and
// had no other signal: a step back of the wall clock stretches the lease by
// the size of the step, and etcd's client giving up is not noticed.
func (v *leaseView) valid() bool {
	w := v.wall.Now()
	v.mu.Lock()
	defer v.mu.Unlock()
	if v.clock == LeaseClockWall {
		return w.Before(v.lastWall.Add(v.ttl))
	}
	return !v.lost && time.Since(v.lastMono) < v.ttl
}
