package kernel

import (
	"testing"
	"time"
)

func TestSampleDerived(t *testing.T) {
	t.Parallel()
	s := Sample{
		Mono:   1_000 * int64(time.Second),
		Boot:   1_060 * int64(time.Second),
		Real:   1_700_000_000*int64(time.Second) + 5,
		TAI:    1_700_000_037*int64(time.Second) + 5 + 900, // read 900 ns later
		Window: 1800,
	}
	if got, want := s.WallBootGap(), time.Duration(1_700_000_000-1_060)*time.Second+5; got != want {
		t.Errorf("WallBootGap() = %v, want %v", got, want)
	}
	if got, want := s.Suspended(), 60*time.Second; got != want {
		t.Errorf("Suspended() = %v, want %v", got, want)
	}
	if got, want := s.TAIOffset(), 37*time.Second; got != want {
		t.Errorf("TAIOffset() = %v, want %v", got, want)
	}
	if got, want := s.Uncertainty(), 1800*time.Nanosecond; got != want {
		t.Errorf("Uncertainty() = %v, want %v", got, want)
	}
	if got := (Sample{Real: 5}).TAIOffset(); got != 0 {
		t.Errorf("TAIOffset() without TAI = %v, want 0", got)
	}
}

func TestFrequencyCorrection(t *testing.T) {
	t.Parallel()
	sec := int64(time.Second)
	tests := []struct {
		name      string
		prev, cur Sample
		want      float64
		ok        bool
	}{
		{"+20 ppm", Sample{Mono: 10 * sec, Raw: 10 * sec}, Sample{Mono: 10*sec + sec + 20_000, Raw: 11 * sec}, 20e-6, true},
		{"-500 ppm", Sample{Mono: 0, Raw: 1}, Sample{Mono: sec - 500_000, Raw: 1 + sec}, -500e-6, true},
		{"too close together", Sample{Mono: 0, Raw: 1}, Sample{Mono: 10, Raw: 11}, 0, false},
		{"no raw clock", Sample{Mono: 0}, Sample{Mono: sec}, 0, false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			got, ok := FrequencyCorrection(tt.prev, tt.cur)
			if ok != tt.ok || (ok && !near(got, tt.want, 1e-12)) {
				t.Errorf("FrequencyCorrection() = %g, %v; want %g, %v", got, ok, tt.want, tt.ok)
			}
		})
	}
}

func near(a, b, eps float64) bool { return a-b < eps && b-a < eps }
