package ktimer

import (
	"errors"
	"testing"
	"time"
)

// TestFallback runs a Timer whose kernel timer could not be had: a Go timer
// underneath, with the same behaviour.
func TestFallback(t *testing.T) {
	k := newTimer(func(func()) (kernelTimer, error) { return nil, errors.New("no timerfd here") })
	defer k.Close()
	if k.Kernel() {
		t.Fatal("Kernel() = true without a kernel timer")
	}
	fired := func(d time.Duration) bool {
		select {
		case <-k.C:
			return true
		case <-time.After(d):
			return false
		}
	}
	k.Reset(10 * time.Millisecond)
	if !fired(5 * time.Second) {
		t.Fatal("no fire in 5 s")
	}
	k.Reset(10 * time.Millisecond)
	k.Stop()
	if fired(100 * time.Millisecond) {
		t.Error("fired after Stop")
	}
	k.Reset(0)
	if !fired(5 * time.Second) {
		t.Error("Reset(0): no fire in 5 s")
	}
}
