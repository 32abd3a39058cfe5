package sdnotify

import (
	"fmt"
	"syscall"
	"time"
	"unsafe"
)

// clockMonotonic is CLOCK_MONOTONIC from <linux/time.h>.
const clockMonotonic = 1

// monotonicNow reads CLOCK_MONOTONIC, the clock systemd's MONOTONIC_USEC is
// on. Go's time package keeps its monotonic reading private, and this
// package uses the standard library only, hence the raw system call.
func monotonicNow() (time.Duration, error) {
	var ts syscall.Timespec
	if _, _, errno := syscall.Syscall(syscall.SYS_CLOCK_GETTIME, clockMonotonic, uintptr(unsafe.Pointer(&ts)), 0); errno != 0 {
		return 0, fmt.Errorf("reading CLOCK_MONOTONIC: %w", errno)
	}
	return time.Duration(ts.Nano()), nil
}
