package announce

import (
	"fmt"
	"time"

	"golang.org/x/sys/unix"

	"github.com/clockwatch/clockwatch/internal/host"
)

// monotonic reads CLOCK_MONOTONIC, the clock of the step detector's
// timestamps, so that both can be compared.
func monotonic() time.Duration {
	return time.Duration(host.Monotonic())
}

// sysBoot returns this boot's id (the policy's state carries over only
// within a boot) and CLOCK_BOOTTIME minus CLOCK_MONOTONIC (the time spent
// suspended), to store monotonic times in BOOTTIME.
func sysBoot() (string, time.Duration, error) {
	id, err := host.BootID()
	if err != nil {
		return "", 0, err
	}
	bt, err := host.ClockNano(unix.CLOCK_BOOTTIME)
	if err != nil {
		return "", 0, fmt.Errorf("clock_gettime(CLOCK_BOOTTIME): %w", err)
	}
	return id, time.Duration(bt - host.Monotonic()), nil
}
