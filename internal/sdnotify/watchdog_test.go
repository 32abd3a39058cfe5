package sdnotify_test

import (
	"bytes"
	"context"
	"errors"
	"log/slog"
	"strings"
	"sync"
	"testing"
	"testing/synctest"
	"time"

	"github.com/clockwatch/clockwatch/internal/sdnotify"
	"github.com/clockwatch/clockwatch/internal/sdnotify/sdnotifytest"
)

type fakePinger struct {
	mu    sync.Mutex
	pings []time.Duration // time since start of each ping
	start time.Time
	err   error
}

func (p *fakePinger) Watchdog() error {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.pings = append(p.pings, time.Since(p.start))
	return p.err
}

func (p *fakePinger) count() int {
	p.mu.Lock()
	defer p.mu.Unlock()
	return len(p.pings)
}

type health struct {
	mu  sync.Mutex
	err error
}

func (h *health) set(err error) {
	h.mu.Lock()
	defer h.mu.Unlock()
	h.err = err
}

func (h *health) check() error {
	h.mu.Lock()
	defer h.mu.Unlock()
	return h.err
}

// TestWatchdogRun follows the pings on a fake clock: one at start, then
// every half interval while healthy, none while unhealthy, and pings again
// when health returns.
func TestWatchdogRun(t *testing.T) {
	t.Parallel()
	synctest.Test(t, func(t *testing.T) {
		p := &fakePinger{start: time.Now()}
		h := &health{}
		var logs bytes.Buffer
		w := &sdnotify.Watchdog{
			Pinger:   p,
			Interval: 10 * time.Second,
			Healthy:  h.check,
			Logger:   slog.New(slog.NewTextHandler(&logs, nil)),
		}
		ctx, cancel := context.WithCancel(t.Context())
		done := make(chan error, 1)
		go func() { done <- w.Run(ctx) }()

		expect := func(at time.Duration, want int) {
			t.Helper()
			time.Sleep(at - time.Since(p.start))
			synctest.Wait()
			if got := p.count(); got != want {
				t.Fatalf("after %v: %d pings, want %d (pings at %v)", at, got, want, p.pings)
			}
		}
		expect(1*time.Second, 1)  // at start
		expect(11*time.Second, 3) // at 5s and 10s
		h.set(errors.New("sampler stuck for 30s"))
		expect(31*time.Second, 3) // none at 15s..30s
		h.set(nil)
		expect(36*time.Second, 4) // at 35s
		cancel()
		if err := <-done; err != nil {
			t.Errorf("Run() = %v, want nil", err)
		}
		warns := strings.Count(logs.String(), "level=WARN")
		if warns != 1 || !strings.Contains(logs.String(), "sampler stuck for 30s") {
			t.Errorf("want one warning naming the health error, got logs:\n%s", logs.String())
		}
		if !strings.Contains(logs.String(), "healthy again") {
			t.Errorf("want an info line on recovery, got logs:\n%s", logs.String())
		}
	})
}

func TestWatchdogRunSendErrorsKeepGoing(t *testing.T) {
	t.Parallel()
	synctest.Test(t, func(t *testing.T) {
		p := &fakePinger{start: time.Now(), err: errors.New("connection refused")}
		var logs bytes.Buffer
		w := &sdnotify.Watchdog{Pinger: p, Interval: 2 * time.Second, Logger: slog.New(slog.NewTextHandler(&logs, nil))}
		ctx, cancel := context.WithTimeout(t.Context(), 5500*time.Millisecond)
		defer cancel()
		if err := w.Run(ctx); err != nil {
			t.Fatalf("Run() = %v, want nil", err)
		}
		if got := p.count(); got != 6 {
			t.Errorf("%d pings in 5.5s at a 1s period, want 6", got)
		}
		if n := strings.Count(logs.String(), "level=ERROR"); n != 1 {
			t.Errorf("%d error lines, want 1 for a failure that persists:\n%s", n, logs.String())
		}
	})
}

func TestWatchdogOff(t *testing.T) {
	t.Parallel()
	p := &fakePinger{}
	if err := (&sdnotify.Watchdog{Pinger: p}).Run(t.Context()); err != nil {
		t.Errorf("Run() with no interval = %v, want nil", err)
	}
	if p.count() != 0 {
		t.Errorf("pinged %d times with the watchdog off", p.count())
	}
	if err := (&sdnotify.Watchdog{Interval: time.Second}).Run(t.Context()); err == nil {
		t.Error("Run() without a Pinger succeeded, want an error")
	}
}

// TestWatchdogRealSocket runs the task against a real notify socket.
func TestWatchdogRealSocket(t *testing.T) {
	t.Parallel()
	sock := sdnotifytest.Listen(t)
	n, err := sdnotify.New(sock.Addr)
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(t.Context())
	done := make(chan error, 1)
	go func() { done <- (&sdnotify.Watchdog{Pinger: n, Interval: 40 * time.Millisecond}).Run(ctx) }()
	for range 3 {
		sock.WaitForLine(t, 5*time.Second, "WATCHDOG=1")
	}
	cancel()
	if err := <-done; err != nil {
		t.Errorf("Run() = %v", err)
	}
}

// TestWatchdogBeat: with a Beat, a ping at once, then one for each beat
// and none between (no ticker of its own, even past half the interval).
func TestWatchdogBeat(t *testing.T) {
	t.Parallel()
	synctest.Test(t, func(t *testing.T) {
		p := &fakePinger{start: time.Now()}
		beat := make(chan struct{})
		w := &sdnotify.Watchdog{Pinger: p, Interval: 2 * time.Second, Beat: beat}
		ctx, cancel := context.WithCancel(t.Context())
		done := make(chan error)
		go func() { done <- w.Run(ctx) }()
		synctest.Wait()
		time.Sleep(5 * time.Second) // 5 ticks of a ticker at 1 s
		synctest.Wait()
		if got := p.count(); got != 1 {
			t.Errorf("%d pings in 5 s without a beat, want the first alone", got)
		}
		for range 3 {
			beat <- struct{}{}
		}
		synctest.Wait()
		if got := p.count(); got != 4 {
			t.Errorf("%d pings after 3 beats, want 4", got)
		}
		cancel()
		if err := <-done; err != nil {
			t.Fatalf("Run() = %v, want nil", err)
		}
	})
}
