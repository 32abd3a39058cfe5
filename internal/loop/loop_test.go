package loop

import (
	"context"
	"testing"
	"time"
)

// TestNext: each wait is the one the poll before asked for.
func TestNext(t *testing.T) {
	t.Parallel()
	ctx, cancel := context.WithCancel(context.Background())
	waits := []time.Duration{time.Millisecond, 60 * time.Millisecond, time.Millisecond}
	var at []time.Time
	Next(ctx, func(context.Context) time.Duration {
		at = append(at, time.Now())
		if len(at) == len(waits)+1 {
			cancel()
			return time.Hour
		}
		return waits[len(at)-1]
	})
	if len(at) != len(waits)+1 {
		t.Fatalf("polled %d times, want %d", len(at), len(waits)+1)
	}
	for i, w := range waits {
		if got := at[i+1].Sub(at[i]); got < w || got > w+time.Second {
			t.Errorf("wait %d: %v, want %v (a little more at most)", i, got, w)
		}
	}
}

func TestWait(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		found    bool
		interval time.Duration
		want     time.Duration
	}{
		{true, 5 * time.Second, 5 * time.Second},
		{false, 5 * time.Second, AbsentRecheck},
		{false, time.Minute, time.Minute},
	} {
		if got := Wait(tc.found, tc.interval); got != tc.want {
			t.Errorf("Wait(%v, %v) = %v, want %v", tc.found, tc.interval, got, tc.want)
		}
	}
}

// TestBackoff: saturating, never negative, never past hi. lo<<30 wrapped
// negative for lo over 8.6 s (issue 24, item 5).
func TestBackoff(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		lo, hi time.Duration
		n      int
		want   time.Duration
	}{
		{time.Second, 8 * time.Second, 1, time.Second},
		{time.Second, 8 * time.Second, 3, 4 * time.Second},
		{time.Second, 8 * time.Second, 4, 8 * time.Second},
		{time.Second, 8 * time.Second, 1000, 8 * time.Second},
		{9 * time.Second, time.Hour, 31, time.Hour},
		{9 * time.Second, time.Hour, 32, time.Hour},
		{9 * time.Second, 1<<63 - 1, 200, 1<<63 - 1},
		{time.Hour, time.Second, 5, time.Hour}, // hi below lo: lo
		{time.Second, 8 * time.Second, 0, time.Second},
	} {
		if got := Backoff(tc.lo, tc.hi, tc.n); got != tc.want {
			t.Errorf("Backoff(%v, %v, %d) = %v, want %v", tc.lo, tc.hi, tc.n, got, tc.want)
		}
	}
}

// TestSleep: a full wait says the context is live, a cancelled context ends
// the wait at once, and a wait of zero or less answers by the context alone.
func TestSleep(t *testing.T) {
	t.Parallel()
	live := context.Background()
	done, cancel := context.WithCancel(context.Background())
	cancel()
	for _, tc := range []struct {
		name string
		ctx  context.Context
		d    time.Duration
		want bool
	}{
		{"full wait", live, time.Millisecond, true},
		{"zero, live", live, 0, true},
		{"negative, live", live, -time.Second, true},
		{"zero, done", done, 0, false},
		{"long wait, done", done, time.Hour, false},
	} {
		start := time.Now()
		if got := Sleep(tc.ctx, tc.d); got != tc.want {
			t.Errorf("%s: Sleep(%v) = %v, want %v", tc.name, tc.d, got, tc.want)
		}
		if el := time.Since(start); tc.want && el < tc.d || el > time.Minute {
			t.Errorf("%s: Sleep(%v) took %v", tc.name, tc.d, el)
		}
	}
}
