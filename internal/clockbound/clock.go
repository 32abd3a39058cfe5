//go:build linux

package clockbound

import (
	"fmt"
	"time"

	"golang.org/x/sys/unix"

	"github.com/clockwatch/clockwatch/internal/host"
)

// VoidAfter is how long after as_of readers may still use a segment, free
// running, if it is never written again: ClockBound's daemon's 1000 s. Past
// it they get "unknown".
const VoidAfter = 1000 * time.Second

// Clock reads CLOCK_MONOTONIC_COARSE, the clock of as_of.
type Clock interface {
	MonotonicCoarse() (time.Duration, error)
}

// SysClock is the kernel's clock.
type SysClock struct{}

var _ Clock = SysClock{}

// MonotonicCoarse reads CLOCK_MONOTONIC_COARSE.
func (SysClock) MonotonicCoarse() (time.Duration, error) {
	ns, err := host.ClockNano(unix.CLOCK_MONOTONIC_COARSE)
	if err != nil {
		return 0, fmt.Errorf("reading CLOCK_MONOTONIC_COARSE: %w", err)
	}
	return time.Duration(ns), nil
}
