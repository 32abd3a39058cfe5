package timesource

import (
	"cmp"
	"errors"
	"fmt"
	"slices"
	"time"
)

// Role says what a source's readings may do.
type Role int

const (
	// Authoritative sources discipline (or describe the discipline of) this
	// clock: their readings may trigger a stepdown.
	Authoritative Role = iota
	// SecondOpinion sources (the SNTP probes) alert but step nobody down
	// unless configured to.
	SecondOpinion
	// Fallback sources (the kernel) only repeat what a time daemon told
	// them: their error bound is judged, but their synchronisation only
	// while no authoritative source answers with a time solution (chronyd
	// without rtcsync leaves the kernel's STA_UNSYNC set while it
	// disciplines the clock).
	Fallback
)

func (r Role) String() string {
	switch r {
	case SecondOpinion:
		return "second_opinion"
	case Fallback:
		return "fallback"
	}
	return "authoritative"
}

// ParseRole reads a role as a configuration file names it:
// "authoritative" or "second_opinion" (a fallback is not configurable).
func ParseRole(s string) (Role, error) {
	switch s {
	case Authoritative.String():
		return Authoritative, nil
	case SecondOpinion.String():
		return SecondOpinion, nil
	}
	return 0, fmt.Errorf("must be %q or %q, got %q", Authoritative, SecondOpinion, s)
}

// Leap is the leap-second status a source announces.
type Leap int

// The leap states, as NTP's leap indicator.
const (
	LeapNone Leap = iota
	LeapInsert
	LeapDelete
	// LeapUnsynchronized is NTP's "alarm": the source has no time solution.
	LeapUnsynchronized
)

func (l Leap) String() string {
	switch l {
	case LeapInsert:
		return "insert"
	case LeapDelete:
		return "delete"
	case LeapUnsynchronized:
		return "unsynchronized"
	}
	return "none"
}

// Reading is one normalised poll of one source.
type Reading struct {
	// Source is the source's stable name ("chrony", "ntpd", "timesyncd",
	// "ptp4l", "kernel", ...): the label in metrics, the source of stepdown
	// events and of verdict findings.
	Source string
	// Role says whether the reading may trigger a stepdown.
	Role Role
	// Found is true once the source has answered at least once in this
	// process: a source that was never found is absent and raises nothing.
	Found bool
	// Up is true when the last poll succeeded; Err says why it did not.
	Up  bool
	Err error
	// HasData is true when the fields below describe a time solution (a
	// daemon can answer before it has one).
	HasData bool
	// Synchronized is the source's own judgement that the clock is
	// synchronised to true time.
	Synchronized bool
	// Offset is the local clock minus true time (positive: this clock is
	// ahead), as the source estimates it.
	Offset time.Duration
	// ErrorBound bounds |local clock − true time| (for NTP daemons
	// |offset| + root dispersion + root delay/2; for the kernel, maxerror).
	ErrorBound time.Duration
	// Leap is the leap second the source announces.
	Leap Leap
	// LastSuccess is when the last poll succeeded (zero: never).
	LastSuccess time.Time
	// Grandmaster is the identity of the grandmaster clock a PTP source
	// follows (the last one other than itself, kept while the source has
	// lost it); empty for sources without one. A change from one
	// non-empty identity to another is a stepdown trigger: the time can
	// move by the two grandmasters' difference. NTP sources leave it
	// empty: their reference changes routinely and their offset shows it.
	Grandmaster string
	// Detail is a short human-readable state ("port UNCALIBRATED",
	// "server 10.0.0.1"), for status lines; may be empty.
	Detail string
	// HasDisruptionMarker says the source carries the hypervisor's clock
	// disruption marker (VMClock): DisruptionMarker changes to a new value
	// on every live migration or snapshot restore. A change is a stepdown
	// trigger, seen across restarts in the same boot: nothing else in the
	// guest reports the move.
	HasDisruptionMarker bool
	DisruptionMarker    uint64
	// ClockUnreliable is the source saying that the clock must not be
	// trusted at all now (VMClock's clock status "unreliable"): a stepdown
	// trigger while it holds.
	ClockUnreliable bool
	// JudgesFleet marks the reading of the fleet's majority judge (the
	// peers source): while it is up, OutsideFleet is the judge's verdict
	// (this clock disagrees with a strict majority of the peers measured),
	// a stepdown trigger whatever the source's role; while it is down
	// (fewer than two peers measured) the judge decides nothing.
	JudgesFleet  bool
	OutsideFleet bool
}

// Noter is what a source implements, besides Source, when its own rich data
// shows more than a Reading carries (chronyd has no selectable source; what
// chrony.conf allows): warnings join the health verdict, the rest
// `clockwatch status`. It is apart from Reading so that a Reading stays a
// comparable value.
type Noter interface {
	Notes() []Note
}

// Note is one fact about a source for people.
type Note struct {
	// Warning makes the note a finding of the health verdict.
	Warning bool
	// Label says where it comes from in a report ("chronyd",
	// "chrony.conf").
	Label string
	// Text is a full sentence.
	Text string
}

// Line is one labelled line of a source's state in `clockwatch status`.
type Line struct {
	Label, Value string
}

// String is the line as `clockwatch status` prints it: "Label          : value".
func (l Line) String() string { return fmt.Sprintf("%-15s: %s", l.Label, l.Value) }

// ErrAbsent marks a source that was looked for and is not there (no socket,
// nobody on the bus): a reading that was never Found and whose Err wraps
// ErrAbsent is neither pending nor a failure, and the judges raise nothing
// for it. Make such an error with Absent.
var ErrAbsent = errors.New("time source absent")

// Absent marks err, why a source was not found, as ErrAbsent; its message
// stays err's.
func Absent(err error) error {
	if err == nil {
		return ErrAbsent
	}
	return absentError{err}
}

type absentError struct{ err error }

func (e absentError) Error() string   { return e.err.Error() }
func (e absentError) Unwrap() []error { return []error{e.err, ErrAbsent} }

// IsAbsent reports whether r is of a source looked for and not there.
func (r Reading) IsAbsent() bool { return !r.Found && errors.Is(r.Err, ErrAbsent) }

// Pending reports whether the source has not been polled yet: no answer and
// no failure. A policy waits for a source's first poll before judging.
func (r Reading) Pending() bool { return !r.Found && !r.Up && r.Err == nil }

// Set is the latest reading of each source, keyed by source name.
type Set map[string]Reading

// Sorted returns the readings ordered by source name, for stable output.
func (s Set) Sorted() []Reading {
	out := make([]Reading, 0, len(s))
	for _, r := range s {
		out = append(out, r)
	}
	slices.SortFunc(out, func(a, b Reading) int { return cmp.Compare(a.Source, b.Source) })
	return out
}

// Source is anything that produces readings. Reading must not block: pollers
// return their last result.
type Source interface {
	Reading() Reading
}
