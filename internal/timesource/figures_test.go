package timesource_test

import (
	"errors"
	"math"
	"strings"
	"testing"
	"time"

	"github.com/clockwatch/clockwatch/internal/timesource"
)

// TestFigures: the one conversion every source's decoder uses. Negative or
// non-finite bounds are invalid; figures beyond a Duration's range saturate
// with their sign instead of wrapping (time.Duration(1e10*1e9) is the most
// negative Duration on amd64: an error bound of 1e10 s judged "fine").
func TestFigures(t *testing.T) {
	t.Parallel()
	sat := timesource.Saturated
	for _, tc := range []struct {
		name            string
		offset          float64
		disp, delay     float64
		wantOff, wantEB time.Duration
		wantErr         string
	}{
		{name: "ordinary", offset: -0.002, disp: 0.001, delay: 0.004, wantOff: -2 * time.Millisecond, wantEB: 5 * time.Millisecond},
		{name: "dispersion 1e10 s saturates", disp: 1e10, wantEB: sat},
		{name: "dispersion 4.6e18 s saturates", disp: 4.6e18, wantEB: sat},
		{name: "dispersion at 2^63 ns saturates", disp: 0x1p63 / 1e9, wantEB: sat},
		{name: "offset +1e10 s saturates positive", offset: 1e10, wantOff: sat, wantEB: sat},
		{name: "offset -1e10 s saturates negative", offset: -1e10, wantOff: -sat, wantEB: sat},
		{name: "offset and bound both huge", offset: 1e300, disp: 1e300, delay: 1e300, wantOff: sat, wantEB: sat},
		{name: "negative dispersion", disp: -1000, wantErr: "chrony's root dispersion is -1000 s, below zero"},
		{name: "negative delay", delay: -1e-9, wantErr: "chrony's root delay is -1e-09 s, below zero"},
		{name: "NaN offset", offset: math.NaN(), wantErr: "chrony's offset is NaN, not a finite number"},
		{name: "infinite dispersion", disp: math.Inf(1), wantErr: "chrony's root dispersion is +Inf, not a finite number"},
		{name: "infinite offset", offset: math.Inf(-1), wantErr: "chrony's offset is -Inf"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			off, eb, err := timesource.NTPFigures("chrony", tc.offset, tc.disp, tc.delay)
			if tc.wantErr != "" {
				if err == nil || !errors.Is(err, timesource.ErrFigure) || !contains(err.Error(), tc.wantErr) {
					t.Fatalf("error %v, want ErrFigure with %q", err, tc.wantErr)
				}
				var r timesource.Reading
				r.Up, r.HasData = true, true
				r.SetFigures(off, eb, err)
				if r.Up || r.HasData || r.Err == nil {
					t.Errorf("reading with an invalid figure: %+v, want a failed poll without data", r)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if off != tc.wantOff || eb != tc.wantEB {
				t.Errorf("offset %v, bound %v; want %v, %v", off, eb, tc.wantOff, tc.wantEB)
			}
		})
	}
}

func contains(s, sub string) bool { return strings.Contains(s, sub) }

func TestSumAndUnits(t *testing.T) {
	t.Parallel()
	sat := timesource.Saturated
	if got := timesource.Sum(sat, 1); got != sat {
		t.Errorf("Sum(max, 1) = %v, want saturated", got)
	}
	if got := timesource.Sum(math.MinInt64, 0); got != sat {
		t.Errorf("Sum(MinInt64) = %v, want saturated", got)
	}
	if got := timesource.Sum(time.Second, -2*time.Second); got != 3*time.Second {
		t.Errorf("Sum(1s, -2s) = %v, want 3s (terms are magnitudes)", got)
	}
	if got := timesource.Units(math.MaxInt64/1000+1, time.Microsecond); got != sat {
		t.Errorf("Units overflow = %v, want saturated", got)
	}
	if got := timesource.Units(-(math.MaxInt64/1000 + 1), time.Microsecond); got != -sat {
		t.Errorf("Units negative overflow = %v, want -saturated", got)
	}
	if got := timesource.Abs(math.MinInt64); got != sat {
		t.Errorf("Abs(MinInt64) = %v", got)
	}
}

// TestUsableAndStale: a reading with a bound below zero, or older than its
// source allows, is a failed poll for the judges.
func TestUsableAndStale(t *testing.T) {
	t.Parallel()
	now := time.Now()
	good := timesource.Reading{Source: "ntpd", Found: true, Up: true, HasData: true, ErrorBound: time.Millisecond, LastSuccess: now.Add(-time.Second)}
	if r := good.Usable(); !r.Up {
		t.Errorf("good reading made unusable: %v", r.Err)
	}
	bad := good
	bad.ErrorBound = math.MinInt64
	if r := bad.Usable(); r.Up || !errors.Is(r.Err, timesource.ErrFigure) {
		t.Errorf("negative bound: %+v, want a failed poll", r)
	}
	if r := good.Stale(now, 2*time.Second); !r.Up {
		t.Errorf("1 s old, 2 s allowed: stale (%v)", r.Err)
	}
	if r := good.Stale(now, 500*time.Millisecond); r.Up || !contains(r.Err.Error(), "old, over 500ms") {
		t.Errorf("1 s old, 500 ms allowed: %+v, want stale", r)
	}
	if r := good.Stale(now, 0); !r.Up {
		t.Error("maxAge 0 must turn the check off")
	}
}
