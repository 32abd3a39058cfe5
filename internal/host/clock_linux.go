//go:build linux

package host

import (
	"syscall"
	"unsafe"
)

// nanotime is the runtime's CLOCK_MONOTONIC reading through the vDSO (about
// 20 ns, where unix.ClockGettime is a real system call costing 300 ns or
// more). The runtime keeps this symbol linkable for exactly such uses.
//
//go:linkname nanotime runtime.nanotime
func nanotime() int64

// Monotonic reads CLOCK_MONOTONIC in nanoseconds, through the vDSO: the
// clock of the step detector's samples and marks, the stepdown policy's
// time, and systemd's MONOTONIC_USEC.
func Monotonic() int64 { return nanotime() }

// ClockNano reads the clock id (a unix.CLOCK_* constant) in nanoseconds
// with a raw system call. clock_gettime never blocks, so the Go scheduler
// need not hear of it; through unix.ClockGettime every read would also wake
// the runtime's monitor thread when it sleeps, which, on an idle daemon,
// costs more than the read.
func ClockNano(id int32) (int64, error) {
	var ts syscall.Timespec
	if _, _, e := syscall.RawSyscall(syscall.SYS_CLOCK_GETTIME, uintptr(id), uintptr(unsafe.Pointer(&ts)), 0); e != 0 {
		return 0, e
	}
	return ts.Nano(), nil
}
