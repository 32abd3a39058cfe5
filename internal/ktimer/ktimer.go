package ktimer

import (
	"sync"
	"time"
)

// Timer sends on C once after each Reset, when the wait has passed. Unlike a
// time.Timer it may, rarely, send once more than asked (a fire that crossed
// a Reset): whoever receives checks the time it waited for, as a scheduler
// does anyway. Close it when done; a closed timer never fires again.
type Timer struct {
	// C receives a value when the timer fires. It holds one: a fire nobody
	// has received yet is not doubled.
	C <-chan struct{}

	c  chan struct{}
	k  kernelTimer
	mu sync.Mutex
	// closed is set by Close: the timerfd's number may belong to another
	// file afterwards.
	closed bool
	// fallback is the time.Timer used where the kernel has no timer for
	// us (not Linux, or timerfd_create refused).
	fallback *time.Timer
}

// kernelTimer is the kernel's timer behind Timer (a timerfd on Linux).
type kernelTimer interface {
	// arm makes the timer fire once after d (d > 0); disarm when 0.
	arm(d time.Duration) error
	close() error
}

// New returns a timer that is not armed. It does not fail: where the
// kernel's timer cannot be had, it is a time.Timer underneath.
func New() *Timer { return newTimer(newKernelTimer) }

// newTimer is New with the kernel's timer from newKernel (an error: a Go
// timer instead).
func newTimer(newKernel func(fire func()) (kernelTimer, error)) *Timer {
	c := make(chan struct{}, 1)
	t := &Timer{C: c, c: c}
	k, err := newKernel(t.fire)
	if err != nil {
		t.fallback = time.AfterFunc(time.Hour, t.fire)
		t.fallback.Stop()
		return t
	}
	t.k = k
	return t
}

// Kernel reports whether the timer is the kernel's (a timerfd), not a Go
// timer.
func (t *Timer) Kernel() bool { return t.k != nil }

// fire sends on C unless a fire is already waiting there.
func (t *Timer) fire() {
	select {
	case t.c <- struct{}{}:
	default:
	}
}

// Reset drops a fire that was waiting on C and arms the timer to fire once
// after d (at once when d ≤ 0), in place of any earlier arming.
func (t *Timer) Reset(d time.Duration) {
	t.mu.Lock()
	defer t.mu.Unlock()
	if t.closed {
		return
	}
	// Drained first: a wait that short may fire before arm returns.
	t.drain()
	if t.fallback != nil {
		t.fallback.Reset(d)
	} else if err := t.k.arm(max(d, time.Nanosecond)); err != nil {
		// Arming a timerfd we hold fails only for a bad value; fall
		// back rather than never fire.
		t.fallback = time.AfterFunc(d, t.fire)
	}
}

// Stop disarms the timer and drops a fire that was waiting on C.
func (t *Timer) Stop() {
	t.mu.Lock()
	defer t.mu.Unlock()
	if t.closed {
		return
	}
	if t.fallback != nil {
		t.fallback.Stop()
	} else {
		t.k.arm(0)
	}
	t.drain()
}

// Close stops the timer for good and frees what it holds (the timerfd and
// the goroutine that reads it).
func (t *Timer) Close() {
	t.mu.Lock()
	defer t.mu.Unlock()
	if t.closed {
		return
	}
	t.closed = true
	if t.fallback != nil {
		t.fallback.Stop()
	}
	if t.k != nil {
		t.k.close()
	}
	t.drain()
}

func (t *Timer) drain() {
	select {
	case <-t.c:
	default:
	}
}
