package sched

import (
	"errors"
	"fmt"
	"os"
	"runtime"
	"strconv"

	"golang.org/x/sys/unix"
)

// Proc is this process's threads: /proc/self/task and
// getpriority/setpriority(PRIO_PROCESS, tid), which on Linux name one thread.
type Proc struct{}

var _ Threads = Proc{}

// IDs lists /proc/self/task.
func (Proc) IDs() ([]int, error) {
	es, err := os.ReadDir("/proc/self/task")
	if err != nil {
		return nil, err
	}
	ids := make([]int, 0, len(es))
	for _, e := range es {
		id, err := strconv.Atoi(e.Name())
		if err != nil {
			return nil, fmt.Errorf("/proc/self/task/%s: not a thread id", e.Name())
		}
		ids = append(ids, id)
	}
	return ids, nil
}

// Nice reads a thread's nice value. The raw system call returns 20 − nice
// (1 to 40), so that no valid value looks like an error.
func (Proc) Nice(tid int) (int, error) {
	p, err := unix.Getpriority(unix.PRIO_PROCESS, tid)
	if err != nil {
		return 0, fmt.Errorf("getpriority(%d): %w", tid, err)
	}
	return 20 - p, nil
}

// SetNice sets a thread's nice value. When CAP_SYS_NICE is permitted but
// not effective (a non-root process given it by the file capability
// cap_sys_nice=p, as in the image), it is made effective on this thread for
// the call, then dropped again.
func (Proc) SetNice(tid, nice int) error {
	runtime.LockOSThread() // capabilities, like nice values, are per thread
	defer runtime.UnlockOSThread()
	if drop, err := raiseSysNice(); err == nil {
		defer drop()
	}
	err := unix.Setpriority(unix.PRIO_PROCESS, tid, nice)
	switch {
	case err == nil:
		return nil
	case errors.Is(err, unix.EACCES), errors.Is(err, unix.EPERM):
		return fmt.Errorf("setpriority(%d, %d): %w: %w", tid, nice, ErrDenied, err)
	case errors.Is(err, unix.ESRCH):
		return fmt.Errorf("setpriority(%d, %d): %w: %w", tid, nice, ErrGone, err)
	}
	return fmt.Errorf("setpriority(%d, %d): %w", tid, nice, err)
}

// capSysNice is CAP_SYS_NICE's bit in the first word of a capability set.
const capSysNice = 1 << unix.CAP_SYS_NICE

// raiseSysNice makes CAP_SYS_NICE effective on the calling thread when it is
// permitted and not yet effective, and returns what drops it again. An error
// is a capability it cannot raise (not permitted), which setpriority then
// reports as EACCES.
func raiseSysNice() (drop func(), err error) {
	hdr := unix.CapUserHeader{Version: unix.LINUX_CAPABILITY_VERSION_3}
	var data [2]unix.CapUserData
	if err := unix.Capget(&hdr, &data[0]); err != nil {
		return nil, fmt.Errorf("capget: %w", err)
	}
	switch {
	case data[0].Effective&capSysNice != 0:
		return func() {}, nil
	case data[0].Permitted&capSysNice == 0:
		return nil, errors.New("CAP_SYS_NICE not permitted")
	}
	data[0].Effective |= capSysNice
	if err := unix.Capset(&hdr, &data[0]); err != nil {
		return nil, fmt.Errorf("capset: %w", err)
	}
	return func() {
		data[0].Effective &^= capSysNice
		_ = unix.Capset(&hdr, &data[0]) // still permitted if this fails: no more than it had
	}, nil
}
