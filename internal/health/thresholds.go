package health

import "time"

// Thresholds are the levels a verdict judges the clock by: health's own
// type, which the configuration's health section (and a source's own, such
// as ptp.health) converts into.
type Thresholds struct {
	// OffsetWarning and OffsetCritical bound the clock's offset from true
	// time (as the time daemon estimates it).
	OffsetWarning, OffsetCritical time.Duration
	// ErrorBoundWarning and ErrorBoundCritical bound the worst case error:
	// the kernel's maxerror, or chrony's |offset| + dispersion + delay/2.
	ErrorBoundWarning, ErrorBoundCritical time.Duration
	// Sources replaces the thresholds above for the named sources (ptp4l
	// runs at microseconds).
	Sources map[string]Thresholds
}

// DefaultThresholds are the levels unless configured: an offset warns from
// 100 ms and is critical from 500 ms, an error bound warns from 250 ms and
// is critical from 1 s.
func DefaultThresholds() Thresholds {
	return Thresholds{OffsetWarning: 100 * time.Millisecond, OffsetCritical: 500 * time.Millisecond,
		ErrorBoundWarning: 250 * time.Millisecond, ErrorBoundCritical: time.Second}
}

// For returns the thresholds that judge source.
func (t Thresholds) For(source string) Thresholds {
	if s, ok := t.Sources[source]; ok {
		return s
	}
	return t
}
