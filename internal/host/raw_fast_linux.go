//go:build linux && (amd64 || arm64)

package host

import (
	"syscall"
	"unsafe"
)

// The system calls of the idle daemon's periodic work, made raw: none of
// them blocks (a stat of a file in /run or of an open file, a read-only
// adjtimex, a timerfd's arming), so the Go scheduler need not hear of them.
// Through the syscall package each would wake the runtime's monitor thread
// (sysmon) when it sleeps, and an idle daemon's wake-up would cost three or
// four thread wake-ups where one does (docs/performance.md, "Idle: the
// kernel's timer"). Like ClockNano. Raw on the two architectures clockwatch
// is packaged for (amd64, arm64); elsewhere the syscall package's calls
// (raw_other.go).

// Fstat is fstat(2) of an open file descriptor.
func Fstat(fd int, st *syscall.Stat_t) error {
	if _, _, e := syscall.RawSyscall(syscall.SYS_FSTAT, uintptr(fd), uintptr(unsafe.Pointer(st)), 0); e != 0 {
		return e
	}
	return nil
}

// Lstat is lstat(2): the link itself when path is one. Only for paths on
// local file systems (a lookup on a network file system may block).
func Lstat(path string, st *syscall.Stat_t) error {
	p, err := syscall.BytePtrFromString(path)
	if err != nil {
		return err
	}
	cwd := atFDCWD // not a constant: uintptr(-100) would not compile
	if _, _, e := syscall.RawSyscall6(sysFstatat, uintptr(cwd), uintptr(unsafe.Pointer(p)),
		uintptr(unsafe.Pointer(st)), atSymlinkNoFollow, 0, 0); e != 0 {
		return e
	}
	return nil
}

// atFDCWD and atSymlinkNoFollow are AT_FDCWD and AT_SYMLINK_NOFOLLOW (the
// syscall package has them on some platforms only).
const (
	atFDCWD           = -0x64
	atSymlinkNoFollow = 0x100
)

// ReadTimex is adjtimex(2) with Modes 0 (set here, whatever tx held): a
// read of the kernel's clock discipline that changes nothing. It returns
// the clock state (TIME_OK ...).
func ReadTimex(tx *syscall.Timex) (int, error) {
	tx.Modes = 0
	r, _, e := syscall.RawSyscall(syscall.SYS_ADJTIMEX, uintptr(unsafe.Pointer(tx)), 0, 0)
	if e != 0 {
		return 0, e
	}
	return int(r), nil
}

// TimerfdArm arms a timerfd (CLOCK_MONOTONIC's or any) to fire once, ns
// nanoseconds from now; 0 disarms it.
func TimerfdArm(fd int, ns int64) error {
	// struct itimerspec: it_interval, then it_value.
	spec := [2]syscall.Timespec{{}, syscall.NsecToTimespec(ns)}
	if _, _, e := syscall.RawSyscall6(syscall.SYS_TIMERFD_SETTIME, uintptr(fd), 0, uintptr(unsafe.Pointer(&spec)), 0, 0, 0); e != 0 {
		return e
	}
	return nil
}
