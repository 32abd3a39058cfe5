package pulse

import (
	"fmt"
	"time"

	"golang.org/x/sys/unix"
)

// Ticker delivers a tick at every whole multiple of its period on
// CLOCK_MONOTONIC. Unlike time.Ticker it must be re-armed: call Next after
// each tick has been handled, so that a tick late by the work it triggered
// is not followed by a second one at once. Two ticks are never more than
// one period apart (plus the timer's latency).
type Ticker struct {
	period time.Duration
	mono   func() time.Duration
	t      *time.Timer
}

// NewTicker returns a ticker whose first tick is at the next multiple of
// period. period must be positive.
func NewTicker(period time.Duration) *Ticker {
	return newTicker(period, monotonic)
}

func newTicker(period time.Duration, mono func() time.Duration) *Ticker {
	if period <= 0 {
		panic(fmt.Sprintf("pulse: non-positive period %s", period))
	}
	t := &Ticker{period: period, mono: mono}
	t.t = time.NewTimer(Wait(t.mono(), period))
	return t
}

// C delivers the ticks.
func (t *Ticker) C() <-chan time.Time { return t.t.C }

// Next arms the ticker for the next multiple of the period after now.
func (t *Ticker) Next() { t.t.Reset(Wait(t.mono(), t.period)) }

// Stop stops the ticker; Next starts it again.
func (t *Ticker) Stop() { t.t.Stop() }

// Wait is how long from mono to the next whole multiple of period: in
// (0, period].
func Wait(mono, period time.Duration) time.Duration {
	return period - mono%period
}

// monotonic reads CLOCK_MONOTONIC (a system call here, about 300 ns: once a
// tick).
func monotonic() time.Duration {
	var ts unix.Timespec
	if err := unix.ClockGettime(unix.CLOCK_MONOTONIC, &ts); err != nil {
		panic(fmt.Sprintf("clock_gettime(CLOCK_MONOTONIC): %v", err)) // cannot fail on Linux
	}
	return time.Duration(ts.Nano())
}
