package lane

import (
	"context"
	"sync"
	"time"
)

// Class is a kind of work; each has its own queue, and the queues are
// served in turn so that a flood of one kind delays another by at most one
// turn.
type Class int

// Lane runs one turn at a time. After a turn of d, the lane owes d×(1/share
// − 1) of rest, and starts no turn while it owes more than the burst: over
// time its turns take at most share of the wall clock. A rest is at most
// MaxRest: work that takes a turn longer than that (a bcrypt check, tens of
// ms) is bounded by a gate of its own (internal/daemon's authGate), and a
// rest as long would hold up every other kind of work. Make it with New.
type Lane struct {
	share float64
	burst time.Duration

	mu     sync.Mutex
	busy   bool
	queues [][]*waiter
	next   int // the class served first at the next grant
	// free is when the lane owes no rest (a GCRA's theoretical arrival
	// time): a turn may start once now ≥ free − burst.
	free  time.Time
	timer *time.Timer
}

type waiter struct {
	ready   chan struct{}
	granted bool
}

// The daemon's lane: other users' work takes at most half the time, in
// turns back to back for up to 2 ms (a TLS handshake with an RSA-2048 key
// takes about 1.5 ms of CPU here).
const (
	DefaultShare = 0.5
	DefaultBurst = 2 * time.Millisecond
	MaxRest      = 10 * time.Millisecond
)

// NewDefault returns a lane with DefaultShare and DefaultBurst.
func NewDefault(classes int) *Lane { return New(classes, DefaultShare, DefaultBurst) }

// New returns a lane for classes kinds of work whose turns take at most
// share (0 < share ≤ 1) of the time, with turns back to back for up to
// burst.
func New(classes int, share float64, burst time.Duration) *Lane {
	if share <= 0 || share > 1 {
		share = 1
	}
	return &Lane{share: share, burst: burst, queues: make([][]*waiter, classes)}
}

// Turn is one turn on the lane; Done ends it.
type Turn struct {
	l     *Lane
	began time.Time
}

// Acquire waits for a turn for work of class c, or for ctx to end.
func (l *Lane) Acquire(ctx context.Context, c Class) (Turn, error) {
	l.mu.Lock()
	now := time.Now()
	if !l.busy && l.queued() == 0 && !now.Before(l.free.Add(-l.burst)) {
		l.busy = true
		l.mu.Unlock()
		return Turn{l: l, began: now}, nil
	}
	w := &waiter{ready: make(chan struct{})}
	l.queues[c] = append(l.queues[c], w)
	l.grantLocked(now)
	l.mu.Unlock()
	select {
	case <-w.ready:
		return Turn{l: l, began: time.Now()}, nil
	case <-ctx.Done():
		l.mu.Lock()
		defer l.mu.Unlock()
		if w.granted {
			l.endLocked(time.Now(), 0)
			return Turn{}, ctx.Err()
		}
		q := l.queues[c]
		for i, o := range q {
			if o == w {
				l.queues[c] = append(q[:i], q[i+1:]...)
				break
			}
		}
		return Turn{}, ctx.Err()
	}
}

// Done ends the turn. A zero Turn's Done does nothing.
func (t Turn) Done() {
	if t.l == nil {
		return
	}
	now := time.Now()
	t.l.mu.Lock()
	defer t.l.mu.Unlock()
	t.l.endLocked(now, now.Sub(t.began))
}

// endLocked books a turn of d and gives the lane to the next waiter.
func (l *Lane) endLocked(now time.Time, d time.Duration) {
	l.busy = false
	start := now.Add(-d)
	if l.free.Before(start) {
		l.free = start
	}
	l.free = l.free.Add(time.Duration(float64(d) / l.share))
	if most := now.Add(l.burst + MaxRest); l.free.After(most) {
		l.free = most
	}
	l.grantLocked(now)
}

// Waiting is how many wait for a turn.
func (l *Lane) Waiting() int {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.queued()
}

func (l *Lane) queued() int {
	n := 0
	for _, q := range l.queues {
		n += len(q)
	}
	return n
}

// grantLocked starts the next waiter's turn when the lane is free and owes
// no more than the burst, or sets the timer for when it will.
func (l *Lane) grantLocked(now time.Time) {
	if l.busy || l.queued() == 0 {
		return
	}
	if wait := l.free.Add(-l.burst).Sub(now); wait > 0 {
		if l.timer == nil {
			l.timer = time.AfterFunc(wait, l.wake)
		} else {
			l.timer.Reset(wait)
		}
		return
	}
	for i := range l.queues {
		c := (l.next + i) % len(l.queues)
		if q := l.queues[c]; len(q) > 0 {
			w := q[0]
			q[0] = nil
			l.queues[c] = q[1:]
			l.next = c + 1
			l.busy, w.granted = true, true
			close(w.ready)
			return
		}
	}
}

func (l *Lane) wake() {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.grantLocked(time.Now())
}

// Do runs f in a turn of class c; it returns ctx's error without running f
// when ctx ends first.
func (l *Lane) Do(ctx context.Context, c Class, f func()) error {
	t, err := l.Acquire(ctx, c)
	if err != nil {
		return err
	}
	defer t.Done()
	f()
	return nil
}
