package probe

import (
	"fmt"
	"time"
	_ "unsafe" // for go:linkname

	"golang.org/x/sys/unix"
)

// nanotime is the runtime's CLOCK_MONOTONIC reading through the vDSO (about
// 20 ns, where unix.ClockGettime is a real system call costing 300 ns or
// more). The runtime keeps this symbol linkable for exactly such uses.
//
//go:linkname nanotime runtime.nanotime
func nanotime() int64

// SysClocks reads the kernel clocks.
type SysClocks struct{}

var _ ClockReader = SysClocks{}

// ReadClocks reads MONOTONIC, then REALTIME and BOOTTIME next to each other
// (their difference is the gap the step detector watches), then
// MONOTONIC_RAW and TAI, then MONOTONIC again to bound the window.
// MONOTONIC and REALTIME come through the vDSO; the other three clocks have
// no vDSO path in Go, so they cost one system call each.
func (SysClocks) ReadClocks(s *Sample) error {
	var boot, raw, tai unix.Timespec
	before := nanotime()
	real := time.Now().UnixNano()
	if err := unix.ClockGettime(unix.CLOCK_BOOTTIME, &boot); err != nil {
		return fmt.Errorf("reading CLOCK_BOOTTIME: %w", err)
	}
	if err := unix.ClockGettime(unix.CLOCK_MONOTONIC_RAW, &raw); err != nil {
		return fmt.Errorf("reading CLOCK_MONOTONIC_RAW: %w", err)
	}
	if err := unix.ClockGettime(unix.CLOCK_TAI, &tai); err != nil {
		return fmt.Errorf("reading CLOCK_TAI: %w", err)
	}
	after := nanotime()
	*s = Sample{
		Mono:   before,
		Real:   real,
		Boot:   boot.Nano(),
		Raw:    raw.Nano(),
		TAI:    tai.Nano(),
		Window: after - before,
	}
	return nil
}
