package policy

import (
	"math"
	"strings"
	"testing"
	"time"

	"github.com/clockwatch/clockwatch/internal/timesource"
	"github.com/clockwatch/clockwatch/stepdown"
)

// TestWrappedBoundIsNotOK: an error bound below zero (what a wrapping
// conversion of a huge one gave: time.Duration(1e10*1e9)) passed "bound >
// threshold" and the policy said ok (issue 24, item 2). It is a failed
// poll at start, and after the start a stepdown once probe_lost's grace
// has passed; the error_bound row (Level) judges a negative figure over
// any threshold: it fires at once.
func TestWrappedBoundIsNotOK(t *testing.T) {
	t.Parallel()
	cfg := Config{HoldDown: time.Minute, Triggers: DefaultTriggers()}
	bad := timesource.Reading{Source: "chrony", Found: true, Up: true, HasData: true, Synchronized: true, ErrorBound: math.MinInt64}

	p := New(cfg, 1)
	p.Await("chrony")
	p.Reading(bad, time.Second)
	if st := p.Status(); st.State == stepdown.StateOK {
		t.Errorf("at start with a negative bound: %+v, want not ok", st)
	}

	p = New(cfg, 1)
	p.Await("chrony")
	good := bad
	good.ErrorBound = time.Millisecond
	p.Reading(good, time.Second)
	if st := p.Status(); st.State != stepdown.StateOK {
		t.Fatalf("good reading: %+v", st)
	}
	p.Reading(bad, 2*time.Second)
	p.Reading(bad, 2*time.Second+cfg.Triggers.ProbeLost.Grace+time.Millisecond)
	if st := p.Status(); st.State != stepdown.StateStepdown || st.Reason != stepdown.ReasonProbeLost {
		t.Errorf("negative bound for longer than probe_lost's grace: %+v, want stepdown probe_lost", st)
	}

	p = New(cfg, 1)
	p.Await("chrony")
	p.Reading(good, time.Second)
	if evs := p.Level(stepdown.ReasonErrorBound, -1000, "chrony", 2*time.Second); len(evs) != 1 || evs[0].Reason != stepdown.ReasonErrorBound {
		t.Errorf("ErrorBound(-1000 s): %+v, want a stepdown error_bound", evs)
	}
}

// TestWrappedBoundDetail: a saturated error bound printed as
// "-2562047h47m16.854775808s" in the event's detail while the verdict was
// right (issue 32, item 6): time.Duration(seconds*1e9) wraps past 292 years.
// The detail says the figure in seconds instead.
func TestWrappedBoundDetail(t *testing.T) {
	t.Parallel()
	cfg := Config{HoldDown: time.Minute, Triggers: DefaultTriggers()}
	for _, tc := range []struct {
		name string
		feed func(p *Policy) []Event
		want string
	}{
		{"saturated bound", func(p *Policy) []Event {
			return p.Level(stepdown.ReasonErrorBound, timesource.Saturated.Seconds(), "chrony", 2*time.Second)
		}, "clock error bound 9.223e+09s from chrony is over"},
		{"offset of 1e12 s", func(p *Policy) []Event { return p.Level(stepdown.ReasonOffset, -1e12, "chrony", 2*time.Second) }, "system clock offset -1e+12s from chrony"},
		{"step of 1e10 s", func(p *Policy) []Event {
			return p.Step(Step{Seconds: 1e10, Mono: 2 * time.Second})
		}, "wall clock stepped by 1e+10s"},
		{"bound in range", func(p *Policy) []Event { return p.Level(stepdown.ReasonErrorBound, 2.5, "chrony", 2*time.Second) }, "clock error bound 2.5s from chrony"},
	} {
		p := New(cfg, 1)
		evs := tc.feed(p)
		if len(evs) == 0 {
			t.Errorf("%s: no event", tc.name)
			continue
		}
		d := evs[len(evs)-1].Detail
		if !strings.Contains(d, tc.want) || strings.Contains(d, "-2562047h") {
			t.Errorf("%s: detail %q, want %q", tc.name, d, tc.want)
		}
	}
}
