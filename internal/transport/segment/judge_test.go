package segment

import (
	"errors"
	"testing"
	"time"

	"github.com/clockwatch/clockwatch/internal/clockbound"
	"github.com/clockwatch/clockwatch/internal/policy"
	"github.com/clockwatch/clockwatch/internal/timesource"
	"github.com/clockwatch/clockwatch/stepdown"
	"github.com/clockwatch/clockwatch/stepdown/boundedtime"
)

func TestJudge(t *testing.T) {
	t.Parallel()
	now := time.Unix(1_800_000_000, 0)
	chrony := func(mod func(*timesource.Reading)) timesource.Reading {
		r := timesource.Reading{Source: "chrony", Role: timesource.Authoritative, Found: true, Up: true, HasData: true,
			Synchronized: true, ErrorBound: time.Millisecond, LastSuccess: now.Add(-2 * time.Second)}
		if mod != nil {
			mod(&r)
		}
		return r
	}
	ok := &policy.Status{State: stepdown.StateOK}
	// 1 ms + 2 s at 15 ppm = 1 ms + 30 µs.
	grown := time.Millisecond + 30*time.Microsecond
	tests := []struct {
		name       string
		ann        *policy.Status
		readings   []timesource.Reading
		wantStatus boundedtime.Status
		wantBound  time.Duration
		wantSource string
	}{
		{name: "synchronised, bound grown since the poll", ann: ok, readings: []timesource.Reading{chrony(nil)},
			wantStatus: boundedtime.StatusSynchronized, wantBound: grown, wantSource: "chrony"},
		{name: "no announcer: the readings alone", readings: []timesource.Reading{chrony(nil)},
			wantStatus: boundedtime.StatusSynchronized, wantBound: grown, wantSource: "chrony"},
		{name: "chrony lost: free running, still growing", ann: ok,
			readings:   []timesource.Reading{chrony(func(r *timesource.Reading) { r.Up, r.Err = false, errors.New("refused") })},
			wantStatus: boundedtime.StatusFreeRunning, wantBound: grown, wantSource: "chrony"},
		{name: "chrony unsynchronised: free running", ann: ok,
			readings:   []timesource.Reading{chrony(func(r *timesource.Reading) { r.Synchronized = false })},
			wantStatus: boundedtime.StatusFreeRunning, wantBound: grown, wantSource: "chrony"},
		{name: "chrony never answered: unknown", ann: ok,
			readings:   []timesource.Reading{{Source: "chrony", Role: timesource.Authoritative, Err: errors.New("no socket")}},
			wantStatus: boundedtime.StatusUnknown},
		{name: "no source at all: unknown", ann: ok, wantStatus: boundedtime.StatusUnknown},
		{name: "second opinions bound nothing", ann: ok,
			readings:   []timesource.Reading{chrony(func(r *timesource.Reading) { r.Role = timesource.SecondOpinion })},
			wantStatus: boundedtime.StatusUnknown},
		{name: "step: disrupted", ann: &policy.Status{State: stepdown.StateStepdown, Reason: stepdown.ReasonStep},
			readings: []timesource.Reading{chrony(nil)}, wantStatus: boundedtime.StatusDisrupted, wantBound: grown, wantSource: "chrony"},
		{name: "suspend: disrupted", ann: &policy.Status{State: stepdown.StateStepdown, Reason: stepdown.ReasonSuspend},
			readings: []timesource.Reading{chrony(nil)}, wantStatus: boundedtime.StatusDisrupted, wantBound: grown, wantSource: "chrony"},
		{name: "drill: disrupted", ann: &policy.Status{State: stepdown.StateStepdown, Reason: stepdown.ReasonDrill, Drill: true},
			readings: []timesource.Reading{chrony(nil)}, wantStatus: boundedtime.StatusDisrupted, wantBound: grown, wantSource: "chrony"},
		{name: "offset stepdown: unknown", ann: &policy.Status{State: stepdown.StateStepdown, Reason: stepdown.ReasonOffset},
			readings: []timesource.Reading{chrony(nil)}, wantStatus: boundedtime.StatusUnknown, wantBound: grown, wantSource: "chrony"},
		{name: "probe lost: unknown", ann: &policy.Status{State: stepdown.StateStepdown, Reason: stepdown.ReasonProbeLost},
			readings: []timesource.Reading{chrony(nil)}, wantStatus: boundedtime.StatusUnknown, wantBound: grown, wantSource: "chrony"},
		{name: "starting: unknown", ann: &policy.Status{State: stepdown.StateUnknown, Reason: stepdown.ReasonStarting},
			readings: []timesource.Reading{chrony(nil)}, wantStatus: boundedtime.StatusUnknown, wantBound: grown, wantSource: "chrony"},
		{name: "synchronised source wins over a tighter lost one", ann: ok,
			readings: []timesource.Reading{
				chrony(func(r *timesource.Reading) { r.Source, r.Up, r.ErrorBound = "ntpd", false, time.Microsecond }),
				chrony(nil),
			}, wantStatus: boundedtime.StatusSynchronized, wantBound: grown, wantSource: "chrony"},
		{name: "tightest of two synchronised sources", ann: ok,
			readings: []timesource.Reading{
				chrony(nil),
				chrony(func(r *timesource.Reading) { r.Source, r.ErrorBound, r.LastSuccess = "ptp4l", time.Microsecond, now }),
			}, wantStatus: boundedtime.StatusSynchronized, wantBound: time.Microsecond, wantSource: "ptp4l"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			v := Judge(tc.ann, tc.readings, now, clockbound.DefaultMaxDriftPPB)
			if v.Status != tc.wantStatus || v.Bound != tc.wantBound || v.Source != tc.wantSource {
				t.Errorf("Judge() = %+v, want status %v bound %v source %q", v, tc.wantStatus, tc.wantBound, tc.wantSource)
			}
			if v.Why == "" {
				t.Error("Judge() says no why")
			}
		})
	}
}

func TestGrow(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		bound, elapsed time.Duration
		ppb            uint32
		want           time.Duration
	}{
		{time.Millisecond, time.Second, 15_000, time.Millisecond + 15*time.Microsecond},
		{0, time.Nanosecond, 1, 1}, // rounded up
		{time.Millisecond, -time.Second, 15_000, time.Millisecond},
		{1 << 62, 1<<63 - 1, 999_999_999, 1<<63 - 1}, // saturates
	} {
		if got := Grow(tc.bound, tc.elapsed, tc.ppb); got != tc.want {
			t.Errorf("Grow(%v, %v, %d) = %v, want %v", tc.bound, tc.elapsed, tc.ppb, got, tc.want)
		}
	}
}
