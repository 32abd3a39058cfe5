//go:build !linux

package sdnotify

import (
	"errors"
	"time"
)

func monotonicNow() (time.Duration, error) {
	return 0, errors.New("reading CLOCK_MONOTONIC: only supported on Linux")
}
