package kernel

import "time"

// Sample is one reading of the kernel clocks, taken back to back. All values
// are nanoseconds on their own clock. A zero Raw or TAI means that clock was
// not read (traces may omit them).
type Sample struct {
	// Mono is CLOCK_MONOTONIC read just before the other clocks. It is the
	// time base of everything clockwatch measures: it never jumps.
	Mono int64
	// Real is CLOCK_REALTIME, the wall clock being judged.
	Real int64
	// Boot is CLOCK_BOOTTIME: MONOTONIC plus the time spent suspended.
	Boot int64
	// Raw is CLOCK_MONOTONIC_RAW: the hardware counter, without NTP's
	// frequency correction.
	Raw int64
	// TAI is CLOCK_TAI: REALTIME plus the kernel's TAI offset.
	TAI int64
	// Window is how long the read took, from the MONOTONIC read before to the
	// one after: the uncertainty of every difference between the clocks.
	Window int64
}

// WallBootGap is REALTIME−BOOTTIME. It moves only when the wall clock is
// stepped or slewed; suspend and resume leave it alone.
func (s Sample) WallBootGap() time.Duration { return time.Duration(s.Real - s.Boot) }

// Suspended is BOOTTIME−MONOTONIC: the time this machine has spent suspended
// since boot.
func (s Sample) Suspended() time.Duration { return time.Duration(s.Boot - s.Mono) }

// TAIOffset is TAI−REALTIME: the TAI offset the kernel actually applies,
// rounded to whole seconds because the two reads are not simultaneous. It is
// zero when TAI was not read.
func (s Sample) TAIOffset() time.Duration {
	if s.TAI == 0 {
		return 0
	}
	return time.Duration(s.TAI - s.Real).Round(time.Second)
}

// Uncertainty is the read window as a duration.
func (s Sample) Uncertainty() time.Duration { return time.Duration(s.Window) }

// FrequencyCorrection is the rate of MONOTONIC against MONOTONIC_RAW between
// two samples, minus one: the frequency correction the kernel applies to the
// hardware clock, as a ratio (1e-6 is 1 ppm). ok is false when the samples are
// too close together, or lack Raw, to say.
func FrequencyCorrection(prev, cur Sample) (ratio float64, ok bool) {
	dRaw := cur.Raw - prev.Raw
	if prev.Raw == 0 || cur.Raw == 0 || dRaw < int64(time.Millisecond) {
		return 0, false
	}
	return float64(cur.Mono-prev.Mono)/float64(dRaw) - 1, true
}
