package announce

import (
	"fmt"
	"os"
	"strings"
	"time"

	"golang.org/x/sys/unix"

	"github.com/clockwatch/clockwatch/internal/probe"
)

// monotonic reads CLOCK_MONOTONIC, the clock of the step detector's
// timestamps, so that both can be compared.
func monotonic() time.Duration {
	return time.Duration(probe.MonotonicNow())
}

// bootIDPath names this boot: the policy's state carries over only within it.
const bootIDPath = "/proc/sys/kernel/random/boot_id"

// sysBoot returns this boot's id and CLOCK_BOOTTIME minus CLOCK_MONOTONIC
// (the time spent suspended), to store monotonic times in BOOTTIME.
func sysBoot() (string, time.Duration, error) {
	b, err := os.ReadFile(bootIDPath)
	if err != nil {
		return "", 0, fmt.Errorf("reading the boot id: %w", err)
	}
	bt, err := probe.ClockNano(unix.CLOCK_BOOTTIME)
	if err != nil {
		return "", 0, fmt.Errorf("clock_gettime(CLOCK_BOOTTIME): %w", err)
	}
	return strings.TrimSpace(string(b)), time.Duration(bt - probe.MonotonicNow()), nil
}
