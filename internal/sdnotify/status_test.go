package sdnotify_test

import (
	"context"
	"errors"
	"sync"
	"sync/atomic"
	"testing"
	"testing/synctest"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/clockwatch/clockwatch/internal/sdnotify"
)

type fakeStatuser struct {
	mu    sync.Mutex
	lines []string
	fail  bool
}

func (f *fakeStatuser) Status(s string) error {
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.fail {
		return errors.New("connection refused")
	}
	f.lines = append(f.lines, s)
	return nil
}

func (f *fakeStatuser) sent() []string {
	f.mu.Lock()
	defer f.mu.Unlock()
	return append([]string(nil), f.lines...)
}

// TestStatusReporter sends the first line at once and then only changes.
func TestStatusReporter(t *testing.T) {
	t.Parallel()
	synctest.Test(t, func(t *testing.T) {
		f := &fakeStatuser{}
		var mu sync.Mutex
		verdict := "OK"
		set := func(v string) { mu.Lock(); verdict = v; mu.Unlock() }
		r := &sdnotify.StatusReporter{Statuser: f, Interval: 5 * time.Second, Status: func() string {
			mu.Lock()
			defer mu.Unlock()
			return verdict
		}}
		ctx, cancel := context.WithCancel(t.Context())
		done := make(chan error, 1)
		go func() { done <- r.Run(ctx) }()
		synctest.Wait()
		time.Sleep(11 * time.Second) // ticks at 5s and 10s: unchanged
		set("CRITICAL: clock stepped by -12.4s")
		time.Sleep(5 * time.Second) // tick at 15s: changed
		synctest.Wait()
		set("OK")
		f.mu.Lock()
		f.fail = true // the 20s tick fails to send, the 25s one retries
		f.mu.Unlock()
		time.Sleep(5 * time.Second)
		synctest.Wait()
		f.mu.Lock()
		f.fail = false
		f.mu.Unlock()
		time.Sleep(5 * time.Second)
		synctest.Wait()
		cancel()
		if err := <-done; err != nil {
			t.Fatalf("Run() = %v", err)
		}
		want := []string{"OK", "CRITICAL: clock stepped by -12.4s", "OK"}
		if diff := cmp.Diff(want, f.sent()); diff != "" {
			t.Errorf("status lines (-want +got):\n%s", diff)
		}
	})
}

func TestStatusReporterMisconfigured(t *testing.T) {
	t.Parallel()
	if err := (&sdnotify.StatusReporter{Interval: time.Second, Status: func() string { return "" }}).Run(t.Context()); err == nil {
		t.Error("Run() without a Statuser succeeded")
	}
}

// TestStatusReporterBeat: with a Beat, the line is asked for at once and
// at each beat, never on a ticker of its own.
func TestStatusReporterBeat(t *testing.T) {
	t.Parallel()
	synctest.Test(t, func(t *testing.T) {
		var asked atomic.Int64
		beat := make(chan struct{})
		r := &sdnotify.StatusReporter{Statuser: &fakeStatuser{}, Interval: time.Second, Beat: beat,
			Status: func() string { asked.Add(1); return "ok" }}
		ctx, cancel := context.WithCancel(t.Context())
		done := make(chan error)
		go func() { done <- r.Run(ctx) }()
		time.Sleep(5 * time.Second)
		synctest.Wait()
		if n := asked.Load(); n != 1 {
			t.Errorf("asked %d times in 5 s without a beat at a 1 s interval, want once", n)
		}
		beat <- struct{}{}
		beat <- struct{}{}
		synctest.Wait()
		if n := asked.Load(); n != 3 {
			t.Errorf("asked %d times after 2 beats, want 3", n)
		}
		cancel()
		if err := <-done; err != nil {
			t.Fatalf("Run() = %v, want nil", err)
		}
	})
}
