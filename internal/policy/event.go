package policy

import (
	"fmt"
	"math"
	"sort"
	"strconv"
	"time"

	"github.com/clockwatch/clockwatch/stepdown"
)

// Event is a change the policy asks the server to announce: a stepdown (Type
// stepdown.TypeStepdown) or a resume (stepdown.TypeResume). The server adds
// the sequence number.
type Event struct {
	Type   string
	State  stepdown.State
	Reason stepdown.Reason
	Epoch  uint64
	Drill  bool
	// Mono is the monotonic time of the observation that caused the event.
	Mono time.Duration
	// The details, set for the reason that has them.
	StepSeconds       *float64
	OffsetSeconds     *float64
	ErrorBoundSeconds *float64
	WallBefore        time.Time
	WallAfter         time.Time
	Source            string
	Detail            string
	HoldSeconds       float64
}

// Message converts the event into its wire form with the given seq.
func (e Event) Message(seq uint64) stepdown.Message {
	return stepdown.Message{
		Type: e.Type, State: e.State, Reason: e.Reason, Epoch: e.Epoch, Seq: seq, Drill: e.Drill,
		StepSeconds: e.StepSeconds, OffsetSeconds: e.OffsetSeconds, ErrorBoundSeconds: e.ErrorBoundSeconds,
		WallBefore: e.WallBefore, WallAfter: e.WallAfter, MonoNanos: int64(e.Mono), Source: e.Source,
		Detail: e.Detail, HoldSeconds: e.HoldSeconds,
	}
}

// Status is the current state, with the reason and details of the event
// that caused it, for a hello or a heartbeat.
type Status struct {
	State  stepdown.State
	Reason stepdown.Reason
	Epoch  uint64
	Drill  bool
	// DisruptionMarker is the last disruption marker (VMClock's) the
	// policy judged, with HasDisruptionMarker: the bounded-time segment
	// copies it, so that a reader who finds another marker on the device
	// knows the segment does not speak for the clock yet.
	DisruptionMarker    uint64
	HasDisruptionMarker bool
}

// Condition is one trigger holding for one source: what keeps the state in
// stepdown until it clears.
type Condition struct {
	Reason stepdown.Reason `json:"reason"`
	Source string          `json:"source"`
}

func sortedConds(m map[Condition]time.Duration) []Condition {
	cs := make([]Condition, 0, len(m))
	for c := range m {
		cs = append(cs, c)
	}
	sort.Slice(cs, func(i, j int) bool {
		if cs[i].Reason != cs[j].Reason {
			return cs[i].Reason < cs[j].Reason
		}
		return cs[i].Source < cs[j].Source
	})
	return cs
}

// conditionText says what a grace condition means, for an event's detail
// (the trigger table's text).
func (p *Policy) conditionText(c Condition, d time.Duration) string {
	row, _ := Lookup(c.Reason)
	what := row.Text(c, p.detail[c.Source])
	if d > 0 {
		what += fmt.Sprintf(" for %s", d.Round(time.Millisecond))
	}
	return what
}

// durationText writes a figure in seconds for an event's detail: as a
// time.Duration within its range (±292 years), as a number of seconds past
// it. time.Duration(x*1e9) wraps there: a saturated error bound printed as
// "-2562047h47m16.854775808s" under a verdict that was right.
func durationText(seconds float64) string {
	if math.IsNaN(seconds) || math.Abs(seconds) >= float64(math.MaxInt64)/1e9 {
		return strconv.FormatFloat(seconds, 'g', 4, 64) + "s"
	}
	return time.Duration(seconds * float64(time.Second)).String()
}
