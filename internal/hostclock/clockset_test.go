package hostclock

import (
	"context"
	"errors"
	"os"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
)

// fakeTimer replays a script of wake results, then blocks until closed.
type fakeTimer struct {
	wakes  chan error
	closed chan struct{}
	arms   int
}

func (f *fakeTimer) arm() error { f.arms++; return nil }

func (f *fakeTimer) wait() error {
	select {
	case err := <-f.wakes:
		return err
	case <-f.closed:
		return os.ErrClosed
	}
}

func (f *fakeTimer) close() error {
	select {
	case <-f.closed:
	default:
		close(f.closed)
	}
	return nil
}

func TestClockSetWatcherSendsMarks(t *testing.T) {
	t.Parallel()
	ft := &fakeTimer{wakes: make(chan error, 3), closed: make(chan struct{})}
	ft.wakes <- errClockSet
	ft.wakes <- nil // expiry: also a mark, the clock went past 2242
	ft.wakes <- errClockSet
	var now int64
	w := &ClockSetWatcher{
		open:  func() (clockSetTimer, error) { return ft, nil },
		now:   func() int64 { now += 1000; return now },
		marks: make(chan Mark, 2),
		ready: make(chan struct{}), done: make(chan struct{}),
	}
	ctx, cancel := context.WithCancel(t.Context())
	done := make(chan error)
	go func() { done <- w.Run(ctx) }()
	for deadline := time.Now().Add(10 * time.Second); w.Wakes() < 3; time.Sleep(time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatalf("only %d wakes handled after 10s", w.Wakes())
		}
	}
	cancel()
	if err := <-done; err != nil {
		t.Fatalf("Run() = %v, want nil", err)
	}
	var got []Mark
	for range 2 {
		got = append(got, <-w.Marks())
	}
	// The third mark found the buffer full: dropped, never blocking.
	if n := w.Dropped(); n != 1 {
		t.Errorf("Dropped() = %d, want 1", n)
	}
	if diff := cmp.Diff([]Mark{{Mono: 1000}, {Mono: 2000}}, got); diff != "" {
		t.Errorf("marks (-want +got):\n%s", diff)
	}
	if ft.arms != 4 {
		t.Errorf("armed %d times, want 4 (once, then after each wake)", ft.arms)
	}
}

func TestClockSetWatcherFailsOnWaitError(t *testing.T) {
	t.Parallel()
	ft := &fakeTimer{wakes: make(chan error, 1), closed: make(chan struct{})}
	ft.wakes <- errors.New("boom")
	w := &ClockSetWatcher{
		open:  func() (clockSetTimer, error) { return ft, nil },
		now:   func() int64 { return 1 },
		marks: make(chan Mark, 1),
		ready: make(chan struct{}), done: make(chan struct{}),
	}
	if err := w.Run(t.Context()); err == nil || err.Error() != "waiting on the clock-set timer: boom" {
		t.Errorf("Run() = %v, want the wait error with context", err)
	}
}

// TestClockSetWatcherRealTimerfd starts the real watcher and stops it. A real
// clock set cannot happen on this machine; the VM test does that.
func TestClockSetWatcherRealTimerfd(t *testing.T) {
	t.Parallel()
	w := NewClockSetWatcher()
	ctx, cancel := context.WithCancel(t.Context())
	done := make(chan error)
	go func() { done <- w.Run(ctx) }()
	select {
	case <-w.Ready():
	case err := <-done:
		t.Fatalf("Run() ended before ready: %v", err)
	case <-time.After(10 * time.Second):
		t.Fatal("watcher not ready after 10s")
	}
	cancel()
	select {
	case err := <-done:
		if err != nil {
			t.Fatalf("Run() = %v, want nil", err)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("Run() did not return after cancel")
	}
	if n := w.Wakes(); n != 0 {
		t.Logf("the kernel woke the watcher %d times (a clock set or resume during the test)", n)
	}
}
