package boundedtime

import (
	"errors"
	"time"
)

// The errors of ClockBound's reader (clock-bound-shm's ShmError), which
// Open and Now wrap or return.
var (
	// ErrNotInitialized: the file is not a segment yet (too short, wrong
	// magic, version or generation 0), or a consistent read failed after
	// a million tries (a writer died mid-update).
	ErrNotInitialized = errors.New("bounded-time segment not initialized")
	// ErrMalformed: the segment is a segment but its content cannot be
	// right (a size below 80 bytes, a drift of 100% or more, an invalid
	// status, a negative bound, a timestamp out of range).
	ErrMalformed = errors.New("bounded-time segment malformed")
	// ErrVersion: the segment has a layout version other than 2.
	ErrVersion = errors.New("bounded-time segment version not supported")
	// ErrCausality: the segment's as_of is later than the reader's
	// monotonic clock (by more than ClockBound's 1 µs allowance): it was
	// written by another boot, or the clocks are broken.
	ErrCausality = errors.New("bounded-time segment written after now (causality breach)")
	// ErrTruncated: the segment's file was truncated while mapped (a read
	// of it faulted). Close the Reader and Open the path again: clockwatch
	// writes a new segment when its own is truncated.
	ErrTruncated = errors.New("bounded-time segment truncated under the reader")
)

// Readers' rules, as ClockBound's compute_bound_at applies them.
const (
	// RestartGrace is how long after as_of a synchronized or free running
	// status stands as written; after it the segment is stale and the
	// status is free running until void_after, unknown after that.
	RestartGrace = 5 * time.Second
	// causalityBlur is how far before as_of the monotonic clock may read
	// and still count as as_of (CLOCK_MONOTONIC_COARSE's imprecision).
	causalityBlur = 1000 * time.Nanosecond
	// maxTimespecSec bounds timestamps: 2^33 s (272 years) of uptime keeps
	// every sum below time.Duration's range.
	maxTimespecSec = 1 << 33
)

// Snapshot is one consistent read of the segment.
type Snapshot struct {
	// Generation is the seqlock generation the read saw (even, not 0).
	Generation uint16
	// AsOf is the CLOCK_MONOTONIC_COARSE time Bound was computed for;
	// VoidAfter the time after which nothing is guaranteed.
	AsOf, VoidAfter time.Duration
	// Bound is the error bound of CLOCK_REALTIME at AsOf.
	Bound time.Duration
	// DisruptionMarker is the VMClock disruption marker the writer saw.
	DisruptionMarker uint64
	// MaxDriftPPB is how fast the bound grows after AsOf, in parts per
	// billion.
	MaxDriftPPB uint32
	// Status is the status as written (At judges staleness).
	Status Status
	// DisruptionSupport is the VMClock flag: set, a reader must also check
	// the VMClock device's disruption marker (Reader.Now does; At, which
	// has no device, returns StatusUnknown).
	DisruptionSupport bool
}

// At returns the interval that contains true time when CLOCK_REALTIME reads
// real and CLOCK_MONOTONIC(_COARSE) reads mono (read in that order, roughly
// together): ClockBound's compute_bound_at. The bound grows by MaxDriftPPB
// times the time since AsOf; a status older than RestartGrace becomes free
// running, one past VoidAfter unknown. With the VMClock flag set At says
// unknown: only a reader that compares the device's disruption marker (as
// Reader.Now does) may promise anything then.
func (s Snapshot) At(real time.Time, mono time.Duration) (earliest, latest time.Time, status Status, err error) {
	bound, status, err := s.bound(mono)
	if err != nil {
		return time.Time{}, time.Time{}, StatusUnknown, err
	}
	if s.DisruptionSupport {
		status = StatusUnknown
	}
	return interval(real, bound, status)
}

// interval is [real - bound, real + bound] in wall time only (time.Unix
// carries no monotonic reading, which would make comparisons ignore the
// wall clock), and twice as fast as Add.
func interval(real time.Time, bound time.Duration, status Status) (earliest, latest time.Time, _ Status, _ error) {
	sec, nsec := real.Unix(), int64(real.Nanosecond())
	return time.Unix(sec, nsec-int64(bound)), time.Unix(sec, nsec+int64(bound)), status, nil
}

// bound is the bound at mono and the status as ClockBound's
// compute_bound_at judges it, the VMClock flag aside.
func (s Snapshot) bound(mono time.Duration) (time.Duration, Status, error) {
	if s.MaxDriftPPB >= 1_000_000_000 || s.Bound < 0 || s.Status < StatusUnknown || s.Status > StatusDisrupted {
		return 0, StatusUnknown, ErrMalformed
	}
	status := s.Status
	if status.Trusted() {
		switch {
		case mono < s.AsOf+RestartGrace:
		case mono < s.VoidAfter:
			status = StatusFreeRunning
		default:
			status = StatusUnknown
		}
	}
	var elapsed time.Duration
	switch {
	case mono >= s.AsOf:
		elapsed = mono - s.AsOf
	case mono > s.AsOf-causalityBlur:
	default:
		return 0, StatusUnknown, ErrCausality
	}
	// The same float arithmetic as ClockBound, so both readers agree to
	// the nanosecond.
	growth := float64(elapsed) / 1e9 * float64(s.MaxDriftPPB)
	bound := time.Duration(maxBound) // saturated: sums past it would wrap below
	if float64(s.Bound)+growth < maxBound {
		bound = s.Bound + time.Duration(growth)
	}
	return bound, status, nil
}

// maxBound caps the bound at 2^62 ns (146 years), so that adding it to a
// timestamp's nanoseconds cannot overflow.
const maxBound = 1 << 62
