package policy

import (
	"time"
)

// Step is a wall-clock step seen by the step detector.
type Step struct {
	// Seconds is the size of the step, positive forward.
	Seconds float64
	// Mono is CLOCK_MONOTONIC when it was seen.
	Mono time.Duration
	// WallBefore and WallAfter are the wall clock around the step.
	WallBefore, WallAfter time.Time
	// Epoch is the step detector's epoch after this step (0: unchanged).
	Epoch uint64
	// How says how the step was seen; its name is the event's source on
	// the wire.
	How Seen
}

// Seen is how the step detector saw a step (the detector's step.Seen, named
// the same on the wire and in the journal).
type Seen uint8

// How steps are seen.
const (
	// SeenSampling: the periodic comparison of samples alone.
	SeenSampling Seen = iota + 1
	// SeenClockSet: the kernel's clock-set notification.
	SeenClockSet
	// SeenBoth: a clock-set notification, and sampling too.
	SeenBoth
	// SeenRestart: while clockwatch was not running (at its start).
	SeenRestart
)

var seenNames = [...]string{SeenSampling: "sampling", SeenClockSet: "clock_set", SeenBoth: "both", SeenRestart: "restart"}

// String is the name on the wire (the stepdown event's source): sampling,
// clock_set, both or restart; "" for none.
func (s Seen) String() string {
	if int(s) < len(seenNames) {
		return seenNames[s]
	}
	return "unknown"
}
