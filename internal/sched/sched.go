package sched

import (
	"errors"
	"fmt"
	"slices"
)

// MinNice and MaxNice bound a nice value (setpriority(2)).
const (
	MinNice = -20
	MaxNice = 19
)

// Threads is the process's threads as the scheduler sees them. Linux keeps a
// nice value per thread, and a thread starts with its creator's.
type Threads interface {
	// IDs lists the process's threads (/proc/self/task).
	IDs() ([]int, error)
	// Nice returns a thread's nice value.
	Nice(tid int) (int, error)
	// SetNice sets a thread's nice value. It returns an error wrapping
	// ErrDenied when the process may not lower it (no CAP_SYS_NICE, and
	// RLIMIT_NICE does not allow it), one wrapping ErrGone when the thread
	// has exited.
	SetNice(tid, nice int) error
}

var (
	// ErrDenied is the kernel refusing a lower nice value (EACCES).
	ErrDenied = errors.New("not permitted")
	// ErrGone is a thread that exited before it was set (ESRCH).
	ErrGone = errors.New("no such thread")
)

// Result is what Lower did.
type Result struct {
	// Want is the nice value asked for.
	Want int
	// Before is the nice value the process was started with (its first
	// thread's).
	Before int
	// After is the nice value in effect: Want when applied, Before when
	// not.
	After int
	// Threads is how many threads Lower set; 0 when it set none.
	Threads int
	// Denied is the kernel refusing: the process has no CAP_SYS_NICE and
	// its RLIMIT_NICE does not reach Want.
	Denied bool
}

// String says what Lower did, for the daemon's log.
func (r Result) String() string {
	switch {
	case r.Denied:
		return fmt.Sprintf("no CAP_SYS_NICE (nor an RLIMIT_NICE reaching %d), nice stays %d: under CPU load a step reaches subscribers later (add the capability, or run under the unit's Nice=)", r.Want, r.Before)
	case r.Threads == 0:
		return fmt.Sprintf("nice %d already (as started: the unit's Nice= or nice(1)), at or below the %d asked for", r.Before, r.Want)
	default:
		return fmt.Sprintf("nice %d → %d on %d threads", r.Before, r.After, r.Threads)
	}
}

// maxPasses bounds how many times Lower lists the threads: a thread created
// while it runs inherits its creator's value, which may not have been set
// yet, so it lists again until a pass finds no new thread.
const maxPasses = 8

// Lower sets every thread's nice value to want when the process was started
// above it; it never raises one (a unit's lower Nice= stands). A refusal is
// a Result with Denied, not an error: a process without the right runs as
// it was started. The error is anything else (the thread list unreadable).
func Lower(ts Threads, want int) (Result, error) {
	if want < MinNice || want > MaxNice {
		return Result{}, fmt.Errorf("nice %d: want %d to %d", want, MinNice, MaxNice)
	}
	ids, err := ts.IDs()
	if err != nil {
		return Result{}, fmt.Errorf("listing the threads: %w", err)
	}
	if len(ids) == 0 {
		return Result{}, errors.New("listing the threads: none")
	}
	slices.Sort(ids) // the first thread (tid = pid) first: its value is the process's
	before, err := ts.Nice(ids[0])
	if err != nil {
		return Result{}, fmt.Errorf("reading thread %d's nice: %w", ids[0], err)
	}
	r := Result{Want: want, Before: before, After: before}
	if before <= want {
		return r, nil
	}
	done := map[int]bool{}
	for pass := 0; pass < maxPasses; pass++ {
		if pass > 0 {
			if ids, err = ts.IDs(); err != nil {
				return r, fmt.Errorf("listing the threads: %w", err)
			}
		}
		fresh := 0
		for _, id := range ids {
			if done[id] {
				continue
			}
			done[id] = true
			fresh++
			err := ts.SetNice(id, want)
			switch {
			case err == nil:
				r.Threads++
			case errors.Is(err, ErrGone):
			case errors.Is(err, ErrDenied) && r.Threads == 0:
				r.Denied = true
				return r, nil
			default:
				return r, fmt.Errorf("setting thread %d's nice to %d (%d threads set): %w", id, want, r.Threads, err)
			}
		}
		if fresh == 0 {
			break
		}
	}
	if r.Threads > 0 {
		r.After = want
	}
	return r, nil
}
