package pulse

import (
	"testing"
	"time"
)

func TestWait(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		mono, period, want time.Duration
	}{
		{0, time.Second, time.Second},
		{1, time.Second, time.Second - 1},
		{time.Second - 1, time.Second, 1},
		{time.Second, time.Second, time.Second},
		{12*time.Second + 300*time.Millisecond, time.Second, 700 * time.Millisecond},
		{12*time.Second + 300*time.Millisecond, 500 * time.Millisecond, 200 * time.Millisecond},
		// A 500 ms and a 1 s ticker meet at every whole second.
		{12*time.Second + 700*time.Millisecond, 500 * time.Millisecond, 300 * time.Millisecond},
	} {
		if got := Wait(tc.mono, tc.period); got != tc.want {
			t.Errorf("Wait(%s, %s) = %s, want %s", tc.mono, tc.period, got, tc.want)
		}
	}
}

// TestTickersShareInstants runs two real tickers of 100 ms and 50 ms: every
// tick of the first lands on a multiple of 100 ms of CLOCK_MONOTONIC, as one
// of the second's does, so the process wakes once for both.
func TestTickersShareInstants(t *testing.T) {
	t.Parallel()
	const period = 100 * time.Millisecond
	a, b := NewTicker(period), NewTicker(period/2)
	defer a.Stop()
	defer b.Stop()
	for range 5 {
		<-a.C()
		at := monotonic()
		a.Next()
		// Late by the timer's latency only: a loaded machine may add
		// milliseconds, never a period.
		if off := at % period; off > period/2 {
			t.Errorf("tick at %s: %s past a multiple of %s", at, off, period)
		}
		<-b.C()
		b.Next()
	}
}
