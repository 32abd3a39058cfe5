package sdnotify

import (
	"time"

	"github.com/clockwatch/clockwatch/internal/host"
)

// monotonicNow reads CLOCK_MONOTONIC, the clock systemd's MONOTONIC_USEC is
// on (Go's time package keeps its monotonic reading private).
func monotonicNow() (time.Duration, error) {
	return time.Duration(host.Monotonic()), nil
}
