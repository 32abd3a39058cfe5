package subscriber

import (
	"strings"
	"testing"

	"github.com/clockwatch/clockwatch/internal/timesources"
	"github.com/clockwatch/clockwatch/stepdown"
)

// TestNotOK: a refused drill says what lets it run. On a host no time daemon
// keeps, that is the two settings, named exactly (before: "no drill: the
// state is stepdown (unsynchronized), not ok", naming nothing).
func TestNotOK(t *testing.T) {
	t.Parallel()
	if kernelSource != timesources.KernelSource {
		t.Fatalf("kernelSource %q, the kernel's readings are filed under %q", kernelSource, timesources.KernelSource)
	}
	for _, tc := range []struct {
		hello stepdown.Message
		want  []string
	}{
		{stepdown.Message{State: stepdown.StateStepdown, Reason: stepdown.ReasonUnsynchronized, Source: "kernel", HoldDownSeconds: 30},
			[]string{"state is stepdown (unsynchronized from kernel)", "stepdown.triggers.error_bound.enabled: false and stepdown.triggers.unsynchronized.enabled: false", "hold-down (30s)"}},
		{stepdown.Message{State: stepdown.StateStepdown, Reason: stepdown.ReasonErrorBound, Source: "kernel"},
			[]string{"no time daemon answers", "stepdown.triggers.error_bound.enabled: false"}},
		{stepdown.Message{State: stepdown.StateStepdown, Reason: stepdown.ReasonOffset, Source: "chrony", HoldDownSeconds: 30},
			[]string{"the trigger offset (stepdown.triggers.offset) holds it", "hold-down (30s)"}},
		{stepdown.Message{State: stepdown.StateUnknown, Reason: stepdown.ReasonStarting},
			[]string{"starting", "try again in a few seconds"}},
		{stepdown.Message{State: stepdown.StateStepdown, Reason: stepdown.ReasonDrill},
			[]string{"a drill is running"}},
	} {
		got := notOK(tc.hello).Error()
		for _, w := range tc.want {
			if !strings.Contains(got, w) {
				t.Errorf("hello %s: %q\nwant it to say %q", tc.hello, got, w)
			}
		}
	}
}
