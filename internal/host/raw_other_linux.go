//go:build linux && !(amd64 || arm64)

package host

import (
	"syscall"
	"unsafe"
)

// ReadTimex is adjtimex(2) with Modes 0 (set here, whatever tx held): a
// read of the kernel's clock discipline that changes nothing. It returns
// the clock state (TIME_OK ...).
func ReadTimex(tx *syscall.Timex) (int, error) {
	tx.Modes = 0
	return syscall.Adjtimex(tx)
}

// TimerfdArm arms a timerfd to fire once, ns nanoseconds from now; 0
// disarms it.
func TimerfdArm(fd int, ns int64) error {
	spec := [2]syscall.Timespec{{}, syscall.NsecToTimespec(ns)}
	if _, _, e := syscall.Syscall6(syscall.SYS_TIMERFD_SETTIME, uintptr(fd), 0, uintptr(unsafe.Pointer(&spec)), 0, 0, 0); e != 0 {
		return e
	}
	return nil
}
