package policy

import (
	"math"
	"testing"
	"time"

	"github.com/clockwatch/clockwatch/internal/timesource"
	"github.com/clockwatch/clockwatch/stepdown"
)

// TestWrappedBoundIsNotOK: an error bound below zero (what a wrapping
// conversion of a huge one gave: time.Duration(1e10*1e9)) passed "bound >
// threshold" and the policy said ok (issue 24, item 2). It is a failed
// poll at start, and after the start a stepdown once probe_lost's grace
// has passed; ErrorBound of a negative figure fires at once.
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
	if evs := p.ErrorBound(-1000, "chrony", 2*time.Second); len(evs) != 1 || evs[0].Reason != stepdown.ReasonErrorBound {
		t.Errorf("ErrorBound(-1000 s): %+v, want a stepdown error_bound", evs)
	}
}
