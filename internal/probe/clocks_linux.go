package probe

import (
	"fmt"
	"syscall"
	"time"
	"unsafe"

	"golang.org/x/sys/unix"
)

// nanotime is the runtime's CLOCK_MONOTONIC reading through the vDSO (about
// 20 ns, where unix.ClockGettime is a real system call costing 300 ns or
// more). The runtime keeps this symbol linkable for exactly such uses.
//
//go:linkname nanotime runtime.nanotime
func nanotime() int64

// ClockNano reads the clock id (a unix.CLOCK_* constant) in nanoseconds
// with a raw system call. clock_gettime never blocks, so the Go scheduler
// need not hear of it; through unix.ClockGettime every read would also wake
// the runtime's monitor thread when it sleeps, which, on an idle daemon,
// costs more than the read.
func ClockNano(id int32) (int64, error) {
	var ts unix.Timespec
	if _, _, e := syscall.RawSyscall(unix.SYS_CLOCK_GETTIME, uintptr(id), uintptr(unsafe.Pointer(&ts)), 0); e != 0 {
		return 0, e
	}
	return ts.Nano(), nil
}

// SysClocks reads the kernel clocks.
type SysClocks struct{}

var _ ClockReader = SysClocks{}

// ReadClocks reads MONOTONIC, then REALTIME and BOOTTIME next to each other
// (their difference is the gap the step detector watches), then
// MONOTONIC_RAW and TAI, then MONOTONIC again to bound the window.
// MONOTONIC and REALTIME come through the vDSO; the other three clocks have
// no vDSO path in Go, so they cost one raw system call each.
func (SysClocks) ReadClocks(s *Sample) error {
	before := nanotime()
	real := time.Now().UnixNano()
	boot, err := ClockNano(unix.CLOCK_BOOTTIME)
	if err != nil {
		return fmt.Errorf("reading CLOCK_BOOTTIME: %w", err)
	}
	raw, err := ClockNano(unix.CLOCK_MONOTONIC_RAW)
	if err != nil {
		return fmt.Errorf("reading CLOCK_MONOTONIC_RAW: %w", err)
	}
	tai, err := ClockNano(unix.CLOCK_TAI)
	if err != nil {
		return fmt.Errorf("reading CLOCK_TAI: %w", err)
	}
	after := nanotime()
	*s = Sample{
		Mono:   before,
		Real:   real,
		Boot:   boot,
		Raw:    raw,
		TAI:    tai,
		Window: after - before,
	}
	return nil
}
