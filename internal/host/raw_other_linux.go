//go:build linux && !(amd64 || arm64)

package host

import (
	"syscall"
	"unsafe"
)

// Adjtimex is adjtimex(2) with tx as given: the kernel's clock state, read
// when tx.Modes is 0. It returns the clock state (TIME_OK ...).
func Adjtimex(tx *syscall.Timex) (int, error) { return syscall.Adjtimex(tx) }

// TimerfdArm arms a timerfd to fire once, ns nanoseconds from now; 0
// disarms it.
func TimerfdArm(fd int, ns int64) error {
	spec := [2]syscall.Timespec{{}, syscall.NsecToTimespec(ns)}
	if _, _, e := syscall.Syscall6(syscall.SYS_TIMERFD_SETTIME, uintptr(fd), 0, uintptr(unsafe.Pointer(&spec)), 0, 0, 0); e != 0 {
		return e
	}
	return nil
}
