package timesource

import (
	"errors"
	"fmt"
	"math"
	"time"
)

// The conversions below are the one place where a figure a source reports
// (seconds as a float, or a count of a unit) becomes a time.Duration. A plain
// time.Duration(x*1e9) is wrong twice for a hostile or broken daemon: above
// about 9.2e9 s the conversion wraps (on amd64 to the most negative
// Duration, so an error bound of 1e10 s judged "under 1 s"), and NaN or a
// negative dispersion passes every "bound > threshold" check. Every source's
// decoder goes through them.

// Saturated is what a figure beyond Duration's range (±292 years) becomes:
// over every threshold, with its sign.
const Saturated = time.Duration(math.MaxInt64)

// ErrFigure marks a figure that means nothing: not a finite number, or a
// bound, dispersion or delay below zero. A reading with one is unusable.
var ErrFigure = errors.New("invalid figure")

// saturate converts nanoseconds to a Duration, clamping at ±Saturated.
func saturate(ns float64) time.Duration {
	switch {
	case ns >= 0x1p63:
		return Saturated
	case ns <= -0x1p63:
		return -Saturated
	}
	return time.Duration(ns)
}

// Offset converts a signed figure in seconds (an offset). It fails on NaN
// and ±Inf; a figure too large for a Duration saturates with its sign.
// what names the figure in the error ("ntpd's offset").
func Offset(what string, seconds float64) (time.Duration, error) {
	if math.IsNaN(seconds) || math.IsInf(seconds, 0) {
		return 0, fmt.Errorf("%w: %s is %v, not a finite number", ErrFigure, what, seconds)
	}
	return saturate(seconds * 1e9), nil
}

// Bound converts a figure in seconds that cannot be negative (an error
// bound, a root dispersion or delay, a jitter). It fails on NaN, ±Inf and
// anything below zero; a figure too large for a Duration saturates.
func Bound(what string, seconds float64) (time.Duration, error) {
	if math.IsNaN(seconds) || math.IsInf(seconds, 0) {
		return 0, fmt.Errorf("%w: %s is %v, not a finite number", ErrFigure, what, seconds)
	}
	if seconds < 0 {
		return 0, fmt.Errorf("%w: %s is %v s, below zero", ErrFigure, what, seconds)
	}
	return saturate(seconds * 1e9), nil
}

// BoundDuration checks a bound a source already gives as a Duration (or a
// count of a unit, converted by Units): below zero it is invalid.
func BoundDuration(what string, d time.Duration) (time.Duration, error) {
	if d < 0 {
		return 0, fmt.Errorf("%w: %s is %v, below zero", ErrFigure, what, d)
	}
	return d, nil
}

// Units converts n units of unit (time.Microsecond: timesyncd's and the
// kernel's figures) into a Duration, saturating rather than wrapping.
func Units(n int64, unit time.Duration) time.Duration {
	if unit <= 0 || n == 0 {
		return 0
	}
	if n > 0 && n > int64(Saturated/unit) {
		return Saturated
	}
	if n < 0 && n < -int64(Saturated/unit) {
		return -Saturated
	}
	return time.Duration(n) * unit
}

// Sum adds bounds (each at least zero), saturating at Saturated: an error
// bound is a sum of terms each of which may already be saturated.
func Sum(terms ...time.Duration) time.Duration {
	var s time.Duration
	for _, t := range terms {
		if t < 0 {
			t = -t
		}
		if t < 0 || s > Saturated-t { // -MinInt64 is still negative
			return Saturated
		}
		s += t
	}
	return s
}

// Abs is |d| without the wrap of -math.MinInt64.
func Abs(d time.Duration) time.Duration {
	if d == math.MinInt64 {
		return Saturated
	}
	return d.Abs()
}

// Check reports why a reading's figures mean nothing, or nil: an error bound
// below zero (what a wrapping conversion of a huge one gave). The judges (the stepdown
// policy, health, the clockbound segment) take a reading that fails it for a
// failed poll, never for a good one.
func (r Reading) Check() error {
	if !r.HasData {
		return nil
	}
	if r.ErrorBound < 0 {
		return fmt.Errorf("%w: %s's error bound is %v, below zero", ErrFigure, r.Source, r.ErrorBound)
	}
	return nil
}

// Usable returns r itself when its figures are valid, else r as a failed
// poll (Up false, Err saying which figure is wrong): what the judges do with
// a reading before they look at it.
func (r Reading) Usable() Reading {
	if !r.Up {
		return r
	}
	if err := r.Check(); err != nil {
		r.Up, r.Err = false, err
	}
	return r
}

// StaleGrace is what Stale allows a reading beyond its source's poll
// interval and poll deadline: the scheduling of the poller and of the feed
// that reads it.
const StaleGrace = time.Second

// Stale returns r as a failed poll when its last success is older than
// maxAge at now (the source's poll interval plus the poll's deadline and a
// grace): a poller stuck in a slow poll keeps its last reading, and that
// reading is no evidence of health any more. A source never read is left
// alone; maxAge 0 turns the check off.
func (r Reading) Stale(now time.Time, maxAge time.Duration) Reading {
	if !r.Up || maxAge <= 0 || r.LastSuccess.IsZero() {
		return r
	}
	if age := now.Sub(r.LastSuccess); age > maxAge {
		r.Up = false
		r.Err = fmt.Errorf("%s's last reading is %v old, over %v: its poll is stuck or too slow", r.Source, age.Round(time.Millisecond), maxAge)
	}
	return r
}

// NTPFigures checks and converts an NTP daemon's figures in seconds (chronyd's
// and ntpd's): the offset, and the error bound |offset| + root dispersion +
// root delay / 2. A figure that is not finite, or a negative dispersion or
// delay, is an error naming it (source: "ntpd").
func NTPFigures(source string, offset, rootDispersion, rootDelay float64) (off, bound time.Duration, err error) {
	off, errO := Offset(source+"'s offset", offset)
	disp, errD := Bound(source+"'s root dispersion", rootDispersion)
	delay, errL := Bound(source+"'s root delay", rootDelay)
	if err := errors.Join(errO, errD, errL); err != nil {
		return 0, 0, err
	}
	return off, Sum(Abs(off), disp, delay/2), nil
}

// SetFigures sets r's Offset and ErrorBound from converted figures, or, when
// err says they mean nothing, makes r a failed poll without data: its
// figures are no evidence of anything.
func (r *Reading) SetFigures(off, bound time.Duration, err error) {
	if err != nil {
		r.Up, r.HasData, r.Err = false, false, err
		return
	}
	r.Offset, r.ErrorBound = off, bound
}
