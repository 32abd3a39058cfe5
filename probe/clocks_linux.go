package probe

import (
	"fmt"

	"golang.org/x/sys/unix"
)

// SysClocks reads the kernel clocks with clock_gettime.
type SysClocks struct{}

var _ ClockReader = SysClocks{}

// ReadClocks reads MONOTONIC, then REALTIME and BOOTTIME next to each other
// (their difference is the gap the step detector watches), then
// MONOTONIC_RAW and TAI, then MONOTONIC again to bound the window.
func (SysClocks) ReadClocks(s *Sample) error {
	var before, real, boot, raw, tai, after unix.Timespec
	if err := unix.ClockGettime(unix.CLOCK_MONOTONIC, &before); err != nil {
		return fmt.Errorf("reading CLOCK_MONOTONIC: %w", err)
	}
	if err := unix.ClockGettime(unix.CLOCK_REALTIME, &real); err != nil {
		return fmt.Errorf("reading CLOCK_REALTIME: %w", err)
	}
	if err := unix.ClockGettime(unix.CLOCK_BOOTTIME, &boot); err != nil {
		return fmt.Errorf("reading CLOCK_BOOTTIME: %w", err)
	}
	if err := unix.ClockGettime(unix.CLOCK_MONOTONIC_RAW, &raw); err != nil {
		return fmt.Errorf("reading CLOCK_MONOTONIC_RAW: %w", err)
	}
	if err := unix.ClockGettime(unix.CLOCK_TAI, &tai); err != nil {
		return fmt.Errorf("reading CLOCK_TAI: %w", err)
	}
	if err := unix.ClockGettime(unix.CLOCK_MONOTONIC, &after); err != nil {
		return fmt.Errorf("reading CLOCK_MONOTONIC: %w", err)
	}
	*s = Sample{
		Mono:   before.Nano(),
		Real:   real.Nano(),
		Boot:   boot.Nano(),
		Raw:    raw.Nano(),
		TAI:    tai.Nano(),
		Window: after.Nano() - before.Nano(),
	}
	return nil
}
