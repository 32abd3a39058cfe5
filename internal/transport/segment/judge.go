package segment

import (
	"math"
	"time"

	"github.com/clockwatch/clockwatch/internal/policy"
	"github.com/clockwatch/clockwatch/internal/timesource"
	"github.com/clockwatch/clockwatch/stepdown"
	"github.com/clockwatch/clockwatch/stepdown/boundedtime"
)

// Verdict is what the segment says at one instant.
type Verdict struct {
	// Status is the clock status to write.
	Status boundedtime.Status
	// Bound is the error bound now: the source's bound at its last update
	// plus the maximum drift since (0 without a source).
	Bound time.Duration
	// Source names the reading the bound comes from ("" without one).
	Source string
	// Why says in a few words why the status is what it is, for logs.
	Why string
}

// Judge decides the status and bound at now. The stepdown announcement
// (nil without an announcer) comes first: a stepdown for a step, a
// suspend or a drill is "disrupted", any other stepdown or an unknown state
// is "unknown", so that the segment never promises what the socket has
// withdrawn. With the announcement ok, the best authoritative reading
// decides: synchronised and up is "synchronized", a source that has answered
// before but is lost or unsynchronised is "free running" with its bound still
// growing, no source is "unknown".
func Judge(ann *policy.Status, readings []timesource.Reading, now time.Time, maxDriftPPB uint32) Verdict {
	v := best(readings, now, maxDriftPPB)
	if ann != nil {
		switch {
		case ann.State == stepdown.StateStepdown && disrupts(ann.Reason):
			v.Status, v.Why = boundedtime.StatusDisrupted, "stepdown: "+string(ann.Reason)
			return v
		case ann.State != stepdown.StateOK:
			v.Status, v.Why = boundedtime.StatusUnknown, string(ann.State)+": "+string(ann.Reason)
			return v
		}
	}
	return v
}

// disrupts reports the stepdown reasons after which the clock itself moved
// (or a drill rehearses that; a VM disruption is ClockBound's own case):
// ClockBound's "disrupted", read from the policy's trigger table
// (Trigger.Disrupts). The others (offset, error
// bound, unsynchronised, a lost probe, starting) say clockwatch cannot vouch
// for the clock: "unknown".
func disrupts(r stepdown.Reason) bool { return policy.Disrupts(r) }

// best picks the reading that bounds the clock most tightly, synchronised
// sources before the others.
func best(readings []timesource.Reading, now time.Time, maxDriftPPB uint32) Verdict {
	v := Verdict{Status: boundedtime.StatusUnknown, Why: "no authoritative time source has a solution"}
	for _, r := range readings {
		if r.Role != timesource.Authoritative || !r.HasData || r.LastSuccess.IsZero() || r.Check() != nil {
			continue
		}
		c := Verdict{Status: boundedtime.StatusFreeRunning, Bound: Grow(r.ErrorBound, now.Sub(r.LastSuccess), maxDriftPPB), Source: r.Source}
		switch {
		case r.Up && r.Synchronized:
			c.Status, c.Why = boundedtime.StatusSynchronized, r.Source+" synchronised"
		case !r.Up:
			c.Why = r.Source + " lost"
		default:
			c.Why = r.Source + " not synchronised"
		}
		if v.Source == "" || rank(c.Status) > rank(v.Status) || rank(c.Status) == rank(v.Status) && c.Bound < v.Bound {
			v = c
		}
	}
	return v
}

func rank(s boundedtime.Status) int {
	switch s {
	case boundedtime.StatusSynchronized:
		return 2
	case boundedtime.StatusFreeRunning:
		return 1
	}
	return 0
}

// Grow is bound after elapsed at maxDriftPPB, rounded up to the nanosecond
// (a negative elapsed, a reading from the future, counts as 0).
func Grow(bound, elapsed time.Duration, maxDriftPPB uint32) time.Duration {
	if elapsed <= 0 {
		return bound
	}
	g := math.Ceil(float64(elapsed) * float64(maxDriftPPB) / 1e9)
	if g >= float64(math.MaxInt64-bound) {
		return math.MaxInt64
	}
	return bound + time.Duration(g)
}
