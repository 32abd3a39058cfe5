package config

import (
	"slices"
	"testing"
	"time"

	"github.com/clockwatch/clockwatch/internal/probe/ptp"
)

// TestPTPThresholds: ptp.triggers and ptp.health decode over their
// defaults (a threshold alone keeps its trigger enabled), reach the
// per-source maps the policy and health look up, and reload.
func TestPTPThresholds(t *testing.T) {
	t.Parallel()
	c, err := Parse([]byte("ptp:\n  triggers:\n    offset:\n      threshold: 50us\n  health:\n    offset_warning: 5us\n"), "test.yml")
	if err != nil {
		t.Fatal(err)
	}
	tr := c.Stepdown.Policy.Triggers.For(ptp.SourceName)
	if !tr.Offset.Enabled || tr.Offset.Threshold != 50*time.Microsecond || tr.Unsynchronized.Grace != 10*time.Second || !tr.ErrorBound.Enabled {
		t.Errorf("ptp4l's triggers %+v: want offset 50µs enabled, the other defaults kept", tr)
	}
	if g := c.Stepdown.Policy.Triggers.For("chrony"); g.Offset.Threshold != time.Second {
		t.Errorf("chrony's offset trigger %+v: want the global 1s", g.Offset)
	}
	if h := c.Health.For(ptp.SourceName); h.OffsetWarning != 5*time.Microsecond || h.OffsetCritical != 100*time.Microsecond {
		t.Errorf("ptp4l's health thresholds %+v", h)
	}
	if h := c.Health.For("ntpd"); h.OffsetWarning != 100*time.Millisecond {
		t.Errorf("ntpd's health thresholds %+v: want the global ones", h)
	}
	d := Default()
	changed := Changed(&d, c)
	if !slices.Equal(changed, []string{"ptp.triggers.offset.threshold", "ptp.health.offset_warning"}) {
		t.Errorf("Changed() = %v", changed)
	}
	for _, k := range changed {
		if !Reloadable(k) {
			t.Errorf("%s is not reloadable", k)
		}
	}
}
