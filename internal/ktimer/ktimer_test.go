package ktimer_test

import (
	"runtime"
	"testing"
	"time"

	"github.com/clockwatch/clockwatch/internal/ktimer"
)

// fired reports whether t fires within d.
func fired(t *ktimer.Timer, d time.Duration) bool {
	select {
	case <-t.C:
		return true
	case <-time.After(d):
		return false
	}
}

func TestKernelOnLinux(t *testing.T) {
	k := ktimer.New()
	defer k.Close()
	if got, want := k.Kernel(), runtime.GOOS == "linux"; got != want {
		t.Errorf("Kernel() = %v on %s, want %v", got, runtime.GOOS, want)
	}
}

func TestFiresAfterTheWait(t *testing.T) {
	for _, d := range []time.Duration{-time.Second, 0, time.Nanosecond, 30 * time.Millisecond} {
		k := ktimer.New()
		start := time.Now()
		k.Reset(d)
		if !fired(k, 5*time.Second) {
			t.Errorf("Reset(%s): no fire in 5 s", d)
		} else if took := time.Since(start); took < d {
			t.Errorf("Reset(%s): fired after %s, before the wait", d, took)
		}
		if fired(k, 50*time.Millisecond) {
			t.Errorf("Reset(%s): fired twice", d)
		}
		k.Close()
	}
}

func TestResetReplaces(t *testing.T) {
	k := ktimer.New()
	defer k.Close()
	k.Reset(time.Hour)
	k.Reset(20 * time.Millisecond)
	if !fired(k, 5*time.Second) {
		t.Fatal("a 20 ms arming after a 1 h one: no fire in 5 s")
	}
	k.Reset(20 * time.Millisecond)
	k.Reset(time.Hour)
	if fired(k, 200*time.Millisecond) {
		t.Error("a 1 h arming after a 20 ms one fired within 200 ms")
	}
}

func TestResetDropsAWaitingFire(t *testing.T) {
	k := ktimer.New()
	defer k.Close()
	k.Reset(0)
	time.Sleep(50 * time.Millisecond) // the fire waits on C
	k.Reset(time.Hour)
	if fired(k, 100*time.Millisecond) {
		t.Error("a fire from before Reset came after it")
	}
}

func TestStopAndClose(t *testing.T) {
	k := ktimer.New()
	k.Reset(20 * time.Millisecond)
	k.Stop()
	if fired(k, 200*time.Millisecond) {
		t.Error("fired after Stop")
	}
	k.Reset(20 * time.Millisecond)
	k.Close()
	if fired(k, 200*time.Millisecond) {
		t.Error("fired after Close")
	}
	// A closed timer stays quiet, whatever is asked of it.
	k.Reset(0)
	k.Stop()
	k.Close()
	if fired(k, 50*time.Millisecond) {
		t.Error("fired after Reset on a closed timer")
	}
}
