package loop

import (
	"context"
	"time"

	"github.com/clockwatch/clockwatch/internal/ktimer"
)

// Next calls poll at once, then again each time the wait it returned has
// passed, until ctx is done. The wait runs from the end of a poll.
func Next(ctx context.Context, poll func(context.Context) time.Duration) {
	NextOrWake(ctx, nil, poll)
}

// NextOrWake is Next, polling also as soon as wake receives (a nil wake
// never does).
//
// The wait is the kernel's timer (internal/ktimer), not Go's: a poller that
// waits 30 s for an absent source, or 64 s for chronyd, would otherwise wake
// the runtime's monitor thread dozens of times while the poller's own thread
// wakes late.
func NextOrWake(ctx context.Context, wake <-chan struct{}, poll func(context.Context) time.Duration) {
	t := ktimer.New()
	defer t.Close()
	for {
		if !waitUntil(ctx, t, wake, time.Now().Add(poll(ctx))) {
			return
		}
	}
}

// waitUntil waits on t until due or until wake receives, and reports
// whether ctx is still live.
func waitUntil(ctx context.Context, t *ktimer.Timer, wake <-chan struct{}, due time.Time) bool {
	t.Reset(time.Until(due))
	for {
		select {
		case <-ctx.Done():
			return false
		case <-wake:
			t.Stop()
			return true
		case <-t.C:
			// A fire that crossed the Reset is not the poll's.
			left := time.Until(due)
			if left <= 0 {
				return true
			}
			t.Reset(left)
		}
	}
}

// Sleep waits d or until ctx is done, and reports whether ctx is still
// live: true after the full wait, false when ctx ended it. A wait of zero or
// less does not wait (and, unlike a zero timer racing ctx, answers by ctx
// alone).
func Sleep(ctx context.Context, d time.Duration) bool {
	if d <= 0 {
		return ctx.Err() == nil
	}
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-ctx.Done():
		return false
	case <-t.C:
		return true
	}
}

// AbsentRecheck is how often a poller in "auto" mode looks again for a
// source it has not found: most nodes run only one time daemon.
const AbsentRecheck = 30 * time.Second

// Wait is a poller's wait before its next poll: interval once its source
// has been found, AbsentRecheck (or interval, when longer) before.
func Wait(found bool, interval time.Duration) time.Duration {
	if found {
		return interval
	}
	return max(AbsentRecheck, interval)
}

// Backoff is the n-th wait of an exponential back-off (n from 1): lo, 2·lo,
// 4·lo, ... never above hi and never below lo. It saturates rather than
// shifts: lo<<30 overflowed for any lo over 8.6 s (chrony.poll_interval 9 s),
// and the negative wait made the chrony poller spin at 23,000 polls a second
// after its 31st failure.
func Backoff(lo, hi time.Duration, n int) time.Duration {
	if hi < lo {
		hi = lo
	}
	d := max(lo, 0)
	for i := 1; i < n && d < hi; i++ {
		if d > hi/2 {
			return hi
		}
		d *= 2
	}
	return min(d, hi)
}
