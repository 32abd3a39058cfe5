package pulse

import (
	"context"
	"sync"
	"sync/atomic"
	"testing"
	"time"
)

// TestPulse runs two functions every 20 ms and one every 30 ms: each is
// called at about its rate, those of one period in registration order and
// on the same tick.
func TestPulse(t *testing.T) {
	t.Parallel()
	p := New()
	var mu sync.Mutex
	var order []string
	var a, b, c atomic.Int64
	p.Every(20*time.Millisecond, func() {
		a.Add(1)
		mu.Lock()
		order = append(order, "a")
		mu.Unlock()
	})
	p.Every(20*time.Millisecond, func() {
		b.Add(1)
		mu.Lock()
		order = append(order, "b")
		mu.Unlock()
	})
	p.Every(30*time.Millisecond, func() { c.Add(1) })
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error)
	go func() { done <- p.Run(ctx) }()
	deadline := time.Now().Add(10 * time.Second)
	for a.Load() < 10 || c.Load() < 5 {
		if time.Now().After(deadline) {
			t.Fatalf("after 10 s: a %d, c %d calls", a.Load(), c.Load())
		}
		time.Sleep(5 * time.Millisecond)
	}
	cancel()
	if err := <-done; err != nil {
		t.Fatal(err)
	}
	mu.Lock()
	defer mu.Unlock()
	for i := 0; i+1 < len(order); i += 2 {
		if order[i] != "a" || order[i+1] != "b" {
			t.Fatalf("calls %v: want a, b on every tick", order)
		}
	}
	if a.Load() != b.Load() {
		t.Errorf("a %d calls, b %d", a.Load(), b.Load())
	}
}

func TestEveryAfterRunPanics(t *testing.T) {
	t.Parallel()
	p := New()
	p.Every(time.Hour, func() {})
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() { p.Run(ctx); close(done) }()
	defer func() {
		cancel()
		<-done
		if recover() == nil {
			t.Error("Every after Run did not panic")
		}
	}()
	for {
		p.mu.Lock()
		running := p.running
		p.mu.Unlock()
		if running {
			break
		}
		time.Sleep(time.Millisecond)
	}
	p.Every(time.Second, func() {})
}

// TestRestAndWake: a period whose only function may wait rests (its
// function called every Rest, so not again within a test's second), and a
// Wake brings the period back at once.
func TestRestAndWake(t *testing.T) {
	t.Parallel()
	p := New()
	var calls atomic.Int64
	var want atomic.Bool
	want.Store(true)
	p.EveryWhile(10*time.Millisecond, func() { calls.Add(1) }, func() time.Duration {
		if want.Load() {
			return 0
		}
		return time.Hour // capped at Rest
	})
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error)
	go func() { done <- p.Run(ctx) }()
	defer func() {
		cancel()
		if err := <-done; err != nil {
			t.Error(err)
		}
	}()
	waitCalls := func(n int64, what string) {
		t.Helper()
		deadline := time.Now().Add(10 * time.Second)
		for calls.Load() < n {
			if time.Now().After(deadline) {
				t.Fatalf("%s: %d calls after 10 s, want %d", what, calls.Load(), n)
			}
			time.Sleep(time.Millisecond)
		}
	}
	waitCalls(5, "wanted")
	want.Store(false)
	// The beat that sees it unwanted, perhaps one already under way: then
	// rest.
	time.Sleep(50 * time.Millisecond)
	resting := calls.Load()
	time.Sleep(500 * time.Millisecond)
	if n := calls.Load(); n != resting {
		t.Fatalf("resting: %d calls in 500 ms, want none (Rest is %v)", n-resting, Rest)
	}
	want.Store(true)
	p.Wake()
	waitCalls(resting+5, "after Wake")
}

// TestWakeBeforeRun does nothing and does not block.
func TestWakeBeforeRun(t *testing.T) {
	t.Parallel()
	p := New()
	p.Every(time.Hour, func() {})
	p.Wake()
}

// TestRestFor: a period rests for the shortest wait its functions give.
func TestRestFor(t *testing.T) {
	t.Parallel()
	p := New()
	var calls atomic.Int64
	p.EveryWhile(10*time.Millisecond, func() { calls.Add(1) }, func() time.Duration { return 300 * time.Millisecond })
	p.EveryWhile(10*time.Millisecond, func() {}, func() time.Duration { return time.Hour })
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error)
	go func() { done <- p.Run(ctx) }()
	time.Sleep(time.Second)
	cancel()
	<-done
	// At 0, 300, 600, 900 ms: 3 or 4 (not 100 at the period, not 0 at Rest).
	if n := calls.Load(); n < 2 || n > 5 {
		t.Errorf("%d calls in 1 s resting 300 ms at a time, want 3 or 4", n)
	}
}

// TestSharedWakeups: a function every 500 ms beside one every 200 ms is
// called on the same wake-ups as the other (at 400 ms, not at 500 ms: up to
// half its period sooner), so the process wakes for the two at the 200 ms
// function's rate alone.
func TestSharedWakeups(t *testing.T) {
	t.Parallel()
	p := New()
	var mu sync.Mutex
	var lastA time.Time
	var gaps []time.Duration
	p.Every(200*time.Millisecond, func() {
		mu.Lock()
		lastA = time.Now()
		mu.Unlock()
	})
	p.Every(500*time.Millisecond, func() {
		mu.Lock()
		gaps = append(gaps, time.Since(lastA))
		mu.Unlock()
	})
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error)
	go func() { done <- p.Run(ctx) }()
	time.Sleep(1700 * time.Millisecond)
	cancel()
	<-done
	mu.Lock()
	defer mu.Unlock()
	// At 400 ms, 800 ms, 1200 ms and 1600 ms, right after the other.
	if len(gaps) < 3 || len(gaps) > 5 {
		t.Errorf("%d calls of the 500 ms function in 1.7 s, want 4 (every 400 ms): %v", len(gaps), gaps)
	}
	for i, g := range gaps {
		if g > 50*time.Millisecond {
			t.Errorf("call %d of the 500 ms function came %v after the 200 ms one's, want the same wake-up", i, g)
		}
	}
}
