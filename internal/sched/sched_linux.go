package sched

import (
	"errors"
	"fmt"
	"os"
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

// SetNice sets a thread's nice value.
func (Proc) SetNice(tid, nice int) error {
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
