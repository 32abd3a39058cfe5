package hostclock

import (
	"fmt"
	"time"

	"golang.org/x/sys/unix"

	"github.com/clockwatch/clockwatch/internal/host"
	"github.com/clockwatch/clockwatch/internal/kernel"
)

// SysClocks reads the kernel clocks.
type SysClocks struct{}

var _ ClockReader = SysClocks{}

// ReadClocks reads MONOTONIC, then REALTIME and BOOTTIME next to each other
// (their difference is the gap the step detector watches), then
// MONOTONIC_RAW and TAI, then MONOTONIC again to bound the window.
// MONOTONIC and REALTIME come through the vDSO; the other three clocks have
// no vDSO path in Go, so they cost one raw system call each.
func (SysClocks) ReadClocks(s *kernel.Sample) error {
	before := host.Monotonic()
	real := time.Now().UnixNano()
	boot, err := host.ClockNano(unix.CLOCK_BOOTTIME)
	if err != nil {
		return fmt.Errorf("reading CLOCK_BOOTTIME: %w", err)
	}
	raw, err := host.ClockNano(unix.CLOCK_MONOTONIC_RAW)
	if err != nil {
		return fmt.Errorf("reading CLOCK_MONOTONIC_RAW: %w", err)
	}
	tai, err := host.ClockNano(unix.CLOCK_TAI)
	if err != nil {
		return fmt.Errorf("reading CLOCK_TAI: %w", err)
	}
	after := host.Monotonic()
	*s = kernel.Sample{
		Mono:   before,
		Real:   real,
		Boot:   boot,
		Raw:    raw,
		TAI:    tai,
		Window: after - before,
	}
	return nil
}
