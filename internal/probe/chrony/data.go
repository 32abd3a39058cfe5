package chrony

import (
	"errors"
	"fmt"
	"math"
	"time"

	"github.com/clockwatch/clockwatch/internal/timesource"
)

// Leap is chronyd's leap status.
type Leap uint16

// The leap statuses, with chrony's numbers.
const (
	LeapNormal         Leap = 0
	LeapInsertSecond   Leap = 1
	LeapDeleteSecond   Leap = 2
	LeapUnsynchronised Leap = 3
)

// String returns the words chronyc uses.
func (l Leap) String() string {
	switch l {
	case LeapNormal:
		return "normal"
	case LeapInsertSecond:
		return "insert second"
	case LeapDeleteSecond:
		return "delete second"
	case LeapUnsynchronised:
		return "not synchronised"
	}
	return "unknown"
}

// Tracking is what `chronyc tracking` shows, in seconds and ratios.
type Tracking struct {
	// RefID is the reference ID of the source chronyd is synchronised to.
	RefID uint32
	// RefName is chronyc's name for the reference: the source's address,
	// or the reference ID as text (a refclock such as "PPS0", or "LOCL").
	RefName string
	// Address is the IP address of the selected source, empty when there is
	// none or it is a reference clock.
	Address string
	// Stratum is chronyd's stratum.
	Stratum int
	// Leap is chronyd's leap status; LeapUnsynchronised means it is not
	// synchronised.
	Leap Leap
	// RefTime is when chronyd last updated the clock from its reference.
	RefTime time.Time
	// SystemOffset is the local clock minus true time as chronyd estimates
	// it now (chronyc's "System time", which chronyc prints unsigned with
	// "fast" for positive and "slow" for negative). chronyd slews it away;
	// it is the negated current correction of the protocol.
	SystemOffset float64
	// LastOffset is the local clock's offset estimated at the last update
	// (positive: local clock ahead).
	LastOffset float64
	// RMSOffset is the long-term average of the offset.
	RMSOffset float64
	// Frequency is the rate at which the clock would be wrong without
	// chronyd's correction, as a ratio (chronyc's ppm × 1e-6; positive:
	// fast).
	Frequency float64
	// ResidualFrequency is the difference between the reference's measured
	// frequency and the one in use, as a ratio.
	ResidualFrequency float64
	// Skew is the estimated error bound of Frequency, as a ratio.
	Skew float64
	// RootDelay is the total network path delay to the stratum-1 clock.
	RootDelay float64
	// RootDispersion is the total dispersion accumulated to the stratum-1
	// clock.
	RootDispersion float64
	// UpdateInterval is the interval between the last two clock updates.
	UpdateInterval float64
}

// Synchronised reports whether chronyd considers itself synchronised.
func (t Tracking) Synchronised() bool { return t.Leap != LeapUnsynchronised }

// ErrorBound is the largest error of the local clock that chronyd's own
// figures allow: |system offset| + root dispersion + root delay / 2.
func (t Tracking) ErrorBound() float64 {
	return math.Abs(t.SystemOffset) + t.RootDispersion + t.RootDelay/2
}

// check range-checks the figures the verdict reads: a root dispersion or
// delay below zero (or a figure that is not finite) makes the report
// unusable; huge ones are kept and saturate when converted (over every
// threshold).
func (t Tracking) check() error {
	_, _, err := timesource.NTPFigures(SourceName, t.SystemOffset, t.RootDispersion, t.RootDelay)
	_, errR := timesource.Bound("chronyd's RMS offset", t.RMSOffset)
	_, errS := timesource.Bound("chronyd's skew", t.Skew)
	return errors.Join(err, errR, errS, t.checkRefTime())
}

// maxRefTimeSec is the last second whose nanoseconds since 1970 fit an
// int64 (year 2262): past it UnixNano wraps, and a reference time of 2^40 s
// was exported as -7.29e9.
const maxRefTimeSec = math.MaxInt64 / int64(time.Second)

// checkRefTime refuses a reference time before 1970 or after 2262: chronyd
// reports 0 (1970) until it first updates the clock, and a real one is now.
// (Go's zero time is no figure chronyd can send: it means none was read.)
func (t Tracking) checkRefTime() error {
	if sec := t.RefTime.Unix(); !t.RefTime.IsZero() && (sec < 0 || sec >= maxRefTimeSec) {
		return fmt.Errorf("%w: chronyd's reference time is %d s after 1970, outside 1970–2262", timesource.ErrFigure, sec)
	}
	return nil
}

// Source is one line of `chronyc sources` with its `sourcestats`.
type Source struct {
	// Address is the source's IP address, or for a reference clock its
	// reference ID as text ("PPS0").
	Address string
	// Name is the source's name: the one in chronyd's configuration when
	// chronyd tells it (unix socket only), else a reverse DNS name when
	// DNS lookups are enabled, else the address.
	Name string
	// Mode is "client", "peer" or "refclock".
	Mode string
	// State is one of "sync", "candidate", "falseticker", "jittery",
	// "outlier", "unreach".
	State string
	// Stratum is the source's stratum.
	Stratum int
	// Poll is the polling interval.
	Poll time.Duration
	// Reachability is the reach register: one bit for each of the last
	// eight polls, set when it was answered.
	Reachability uint8
	// NoSelect and Prefer are the source's noselect and prefer options.
	NoSelect, Prefer bool
	// LastSampleAge is the time since the last sample was taken; negative
	// when the source never gave one.
	LastSampleAge time.Duration
	// LastSampleOffset is the offset of the last sample (local clock minus
	// source, adjusted for slews since), in seconds.
	LastSampleOffset float64
	// LastSampleOriginalOffset is the same offset as measured.
	LastSampleOriginalOffset float64
	// LastSampleError is the margin of error of the last sample.
	LastSampleError float64
	// Stats is the source's `sourcestats` line; nil when chronyd had none.
	Stats *SourceStats
}

// Selectable reports whether chronyd may select the source now.
func (s Source) Selectable() bool { return s.State == "sync" || s.State == "candidate" }

// SourceStats is one line of `chronyc sourcestats`.
type SourceStats struct {
	// Samples is the number of sample points kept.
	Samples int
	// Runs is the number of runs of residuals with the same sign.
	Runs int
	// Span is the time between the oldest and newest samples.
	Span time.Duration
	// StdDev is the estimated sample standard deviation, in seconds.
	StdDev float64
	// EstimatedOffset is the source's estimated offset (local minus source).
	EstimatedOffset float64
	// EstimatedOffsetError is the error bound of EstimatedOffset.
	EstimatedOffsetError float64
	// ResidualFrequency is the residual frequency, as a ratio.
	ResidualFrequency float64
	// Skew is the error bound of ResidualFrequency, as a ratio.
	Skew float64
}

// Data is the result of one poll of chronyd.
type Data struct {
	Tracking Tracking
	Sources  []Source
}

// SelectableSources counts the sources chronyd may select now.
func (d Data) SelectableSources() int {
	n := 0
	for _, s := range d.Sources {
		if s.Selectable() {
			n++
		}
	}
	return n
}
