package hostclock

import (
	"context"
	"errors"
	"fmt"
	"sync/atomic"
)

// Mark is a clock-set mark: the kernel said that the wall clock was set
// discontinuously (or that the machine resumed from suspend).
type Mark struct {
	// Mono is CLOCK_MONOTONIC (ns) read as soon as the watcher woke.
	Mono int64
}

// errClockSet is what a clockSetTimer's wait returns when the kernel
// cancelled the timer because the clock was set.
var errClockSet = errors.New("clock was set")

// clockSetTimer is the kernel object the watcher waits on: a timer armed far
// in the future that the kernel cancels when the wall clock is set.
type clockSetTimer interface {
	// arm (re-)arms the timer; it must be called after every wake.
	arm() error
	// wait blocks until the timer is cancelled by a clock set (errClockSet),
	// expires (nil), or is closed (an error).
	wait() error
	// close releases the timer and unblocks wait. It may be called twice.
	close() error
}

// ClockSetWatcher is the task that turns the kernel's clock-set
// notifications into Marks on a channel.
type ClockSetWatcher struct {
	open     func() (clockSetTimer, error)
	now      func() int64
	marks    chan Mark
	ready    chan struct{}
	done     chan struct{}
	dropped  atomic.Uint64
	wakes    atomic.Uint64
	watching atomic.Bool
}

// Watching reports whether the timer is armed and watched: false before Run
// has armed it and after Run returned.
func (w *ClockSetWatcher) Watching() bool { return w.watching.Load() }

// Marks returns the channel the marks are sent on. A mark that finds the
// channel full is dropped and counted: the marks already queued wake the
// sampler anyway, and sampling sees the step.
func (w *ClockSetWatcher) Marks() <-chan Mark { return w.marks }

// Ready is closed once the timer is armed: from then on no clock set goes
// unnoticed.
func (w *ClockSetWatcher) Ready() <-chan struct{} { return w.ready }

// Done is closed when Run returns: from then on clock sets go unnoticed
// until the sampler's next sample.
func (w *ClockSetWatcher) Done() <-chan struct{} { return w.done }

// Dropped returns how many marks found the channel full.
func (w *ClockSetWatcher) Dropped() uint64 { return w.dropped.Load() }

// Wakes returns how many times the kernel woke the watcher.
func (w *ClockSetWatcher) Wakes() uint64 { return w.wakes.Load() }

// Run arms the timer and sends a Mark for every wake until ctx is done. It
// returns an error only if the timer cannot be created or armed, or waiting
// on it fails.
func (w *ClockSetWatcher) Run(ctx context.Context) error {
	defer close(w.done)
	t, err := w.open()
	if err != nil {
		return fmt.Errorf("creating the clock-set timer: %w", err)
	}
	defer t.close()
	if err := t.arm(); err != nil {
		return fmt.Errorf("arming the clock-set timer: %w", err)
	}
	w.watching.Store(true)
	defer w.watching.Store(false)
	close(w.ready)
	stop := context.AfterFunc(ctx, func() { t.close() })
	defer stop()
	for {
		err := t.wait()
		if ctx.Err() != nil {
			return nil
		}
		if err != nil && !errors.Is(err, errClockSet) {
			return fmt.Errorf("waiting on the clock-set timer: %w", err)
		}
		// The time comes first: it is the earliest evidence. Re-arm before
		// sending, so that the sample the mark triggers is taken after the
		// timer is watching again: a set in between shows in that sample.
		m := Mark{Mono: w.now()}
		w.wakes.Add(1)
		if err := t.arm(); err != nil {
			return fmt.Errorf("re-arming the clock-set timer: %w", err)
		}
		select {
		case w.marks <- m:
		default:
			w.dropped.Add(1)
		}
	}
}
