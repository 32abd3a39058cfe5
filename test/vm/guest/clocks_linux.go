package guest

import (
	"fmt"

	"golang.org/x/sys/unix"
)

// Gap reads REALTIME and BOOTTIME back to back and returns REALTIME−BOOTTIME
// in nanoseconds. Only a step of the wall clock, or a slew (nothing slews in
// the test VM), changes it; the difference of two gaps is the step between.
func Gap() (int64, error) {
	var real, boot unix.Timespec
	if err := unix.ClockGettime(unix.CLOCK_REALTIME, &real); err != nil {
		return 0, fmt.Errorf("reading CLOCK_REALTIME: %w", err)
	}
	if err := unix.ClockGettime(unix.CLOCK_BOOTTIME, &boot); err != nil {
		return 0, fmt.Errorf("reading CLOCK_BOOTTIME: %w", err)
	}
	return real.Nano() - boot.Nano(), nil
}

// Mono returns CLOCK_MONOTONIC in nanoseconds: the time base of every latency
// the tests measure, since the clocks being stepped cannot be one.
func Mono() int64 {
	var ts unix.Timespec
	_ = unix.ClockGettime(unix.CLOCK_MONOTONIC, &ts) // Cannot fail on Linux.
	return ts.Nano()
}
