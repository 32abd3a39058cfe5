package policy

import (
	"fmt"
	"math"
	"time"

	"github.com/clockwatch/clockwatch/stepdown"
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

// Step feeds a step. Steps at or below the threshold only update the epoch.
// A step seen at restart is a trigger like any other: its hold-down counts
// from when it was seen.
func (p *Policy) Step(s Step) []Event {
	if s.Epoch != 0 {
		p.epoch = s.Epoch
	}
	e, fired := p.instant(stepdown.ReasonStep, math.Abs(s.Seconds), s.How.String(), s.Mono)
	if !fired {
		return p.Tick(s.Mono)
	}
	e.StepSeconds = stepdown.Float(s.Seconds)
	e.WallBefore, e.WallAfter = s.WallBefore, s.WallAfter
	e.Detail = fmt.Sprintf("wall clock stepped by %s", durationText(s.Seconds))
	if s.How == SeenRestart {
		e.Detail += " while clockwatch was not running"
	}
	return []Event{e}
}
