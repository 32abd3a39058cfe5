//go:build linux

package host

import (
	"errors"
	"testing"

	"golang.org/x/sys/unix"
)

// Monotonic is CLOCK_MONOTONIC: between two system-call reads of it.
func TestMonotonic(t *testing.T) {
	t.Parallel()
	before, err := ClockNano(unix.CLOCK_MONOTONIC)
	if err != nil {
		t.Fatal(err)
	}
	got := Monotonic()
	after, err := ClockNano(unix.CLOCK_MONOTONIC)
	if err != nil {
		t.Fatal(err)
	}
	if got < before || got > after {
		t.Errorf("Monotonic() = %d, not between %d and %d", got, before, after)
	}
}

// TestClockNano: the raw read agrees with unix.ClockGettime on each clock
// the daemon reads that way, and an unknown clock is an error.
func TestClockNano(t *testing.T) {
	for _, id := range []int32{unix.CLOCK_BOOTTIME, unix.CLOCK_MONOTONIC_RAW, unix.CLOCK_TAI, unix.CLOCK_MONOTONIC_COARSE} {
		var before, after unix.Timespec
		if err := unix.ClockGettime(id, &before); err != nil {
			t.Fatal(err)
		}
		got, err := ClockNano(id)
		if err != nil {
			t.Fatalf("clock %d: %v", id, err)
		}
		if err := unix.ClockGettime(id, &after); err != nil {
			t.Fatal(err)
		}
		if got < before.Nano() || got > after.Nano() {
			t.Errorf("clock %d: %d, not between %d and %d", id, got, before.Nano(), after.Nano())
		}
	}
	if _, err := ClockNano(1000); !errors.Is(err, unix.EINVAL) {
		t.Errorf("clock 1000: error %v, want EINVAL", err)
	}
}
