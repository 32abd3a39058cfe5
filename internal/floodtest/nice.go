package floodtest

import (
	"fmt"
	"os"
	"strconv"
	"syscall"
)

// renice sets the nice value of every thread of this process (Linux's nice
// is per thread; threads started later inherit their creator's). The daemon
// the floods are measured against runs at the unit's Nice=-10, and so do the
// good subscriber and the drills, as a lock holder that matters should
// (docs/stepdown-protocol.md, "Under load"); the floods run at 0.
func renice(nice int) error {
	tasks, err := os.ReadDir("/proc/self/task")
	if err != nil {
		return err
	}
	for _, t := range tasks {
		tid, err := strconv.Atoi(t.Name())
		if err != nil {
			continue
		}
		if err := syscall.Setpriority(syscall.PRIO_PROCESS, tid, nice); err != nil {
			return fmt.Errorf("setting thread %d's nice value to %d: %w", tid, nice, err)
		}
	}
	return nil
}

// niceness returns this thread's nice value.
func niceness() int {
	// getpriority(2) returns 20 − nice on Linux.
	p, err := syscall.Getpriority(syscall.PRIO_PROCESS, 0)
	if err != nil {
		return 0
	}
	return 20 - p
}
