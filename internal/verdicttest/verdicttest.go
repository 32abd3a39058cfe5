package verdicttest

import (
	"math"
	"testing"
	"time"

	"github.com/clockwatch/clockwatch/internal/config"
	"github.com/clockwatch/clockwatch/internal/health"
	"github.com/clockwatch/clockwatch/internal/policy"
	"github.com/clockwatch/clockwatch/internal/timesource"
	"github.com/clockwatch/clockwatch/stepdown"
)

// Raw is what the test itself read from the input, independently of the
// decoder under test: the figures a source's error bound is made of.
type Raw struct {
	// Invalid is set when the input's figures mean nothing: missing, not
	// finite, a bound below zero. Why says which.
	Invalid bool
	Why     string
	// Bound is |offset| + the bound's terms in seconds, computed in
	// float64 (which does not wrap), when the figures are valid.
	Bound float64
}

// Finite records a figure that must be a finite number.
func (r *Raw) Finite(name string, v float64) float64 {
	if math.IsNaN(v) || math.IsInf(v, 0) {
		r.invalid(name + " not finite")
	}
	return v
}

// NonNegative records a figure that must be finite and at least zero.
func (r *Raw) NonNegative(name string, v float64) float64 {
	r.Finite(name, v)
	if v < 0 {
		r.invalid(name + " below zero")
	}
	return v
}

func (r *Raw) invalid(why string) {
	if !r.Invalid {
		r.Invalid, r.Why = true, why
	}
}

// Check feeds r to a fresh policy (waiting for r's source, default
// triggers) and to health with the default thresholds, and fails the test
// when either says ok for a reading that is not: raw figures invalid, a
// bound over a threshold by the test's own float arithmetic, or a reading
// whose converted figures are out of range.
func Check(t *testing.T, r timesource.Reading, raw Raw) {
	t.Helper()
	p := policy.New(policy.Config{HoldDown: time.Minute, Triggers: policy.DefaultTriggers()}, 1)
	p.Await(r.Source)
	p.Reading(r, time.Second)
	ok := p.Status().State == stepdown.StateOK

	h := config.Default().Health.Thresholds()
	v := health.Judge(health.Facts{Sources: timesource.Set{r.Source: r}}, h)
	healthy := v.Level == health.OK

	threshold := policy.DefaultTriggers().ErrorBound.Threshold
	switch {
	case raw.Invalid && ok:
		t.Fatalf("the policy says ok for a reading whose figures mean nothing (%s): %+v", raw.Why, r)
	case raw.Invalid && healthy:
		t.Fatalf("health says OK for a reading whose figures mean nothing (%s): %+v", raw.Why, r)
	case !raw.Invalid && ok && raw.Bound > threshold.Seconds():
		t.Fatalf("the policy says ok for a bound of %g s (over %v): %+v", raw.Bound, threshold, r)
	case ok && (!r.Up || !r.HasData || r.ErrorBound < 0 || r.ErrorBound > threshold || timesource.Abs(r.Offset) > policy.DefaultTriggers().Offset.Threshold):
		t.Fatalf("the policy says ok for %+v", r)
	case healthy && r.Up && r.HasData && r.Synchronized && (r.ErrorBound < 0 || r.ErrorBound >= h.ErrorBoundCritical):
		t.Fatalf("health says OK for %+v", r)
	}
}
