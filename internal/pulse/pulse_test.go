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
