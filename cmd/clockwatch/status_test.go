//go:build linux

package main

import (
	"testing"

	"github.com/clockwatch/clockwatch/internal/config"
	"github.com/clockwatch/clockwatch/internal/health"
	"github.com/clockwatch/clockwatch/internal/kernel"
	"github.com/clockwatch/clockwatch/internal/timesource"
	"github.com/clockwatch/clockwatch/internal/timesources"
)

// On a host nobody disciplines, status carries the daemon's start WARN, as a
// WARNING; with a time daemon answering, or the triggers off, it does not.
func TestStatusSaysUndisciplined(t *testing.T) {
	t.Parallel()
	undisciplined := &kernel.Timex{State: kernel.TimeError, Status: kernel.StatusUnsync, MaxError: kernel.MaxErrorSaturated}
	sd := config.DefaultStepdown()
	off := sd
	off.Policy.Triggers.Unsynchronized.Enabled, off.Policy.Triggers.ErrorBound.Enabled = false, false
	answers := timesource.Reading{Source: "chrony", Found: true, Up: true, HasData: true}
	for _, tc := range []struct {
		name    string
		reports []timesources.Report
		sd      config.Stepdown
		want    bool
	}{
		{"no time daemon", nil, sd, true},
		{"chronyd answers", []timesources.Report{{Reading: answers, Traits: timesources.Traits{Disciplines: true}}}, sd, false},
		// ptp4l disciplines the PTP hardware clock, not this one.
		{"only ptp4l answers", []timesources.Report{{Reading: answers}}, sd, true},
		{"triggers off", nil, off, false},
	} {
		v := withUndisciplined(health.Verdict{}, undisciplined, timesources.Disciplined(tc.reports), tc.sd)
		want := health.UndisciplinedWarning(tc.sd.Enabled, tc.sd.Policy.Triggers)
		got := len(v.Findings) == 1 && v.Findings[0].Reason == want && v.Level == health.Warning
		if got != tc.want || (!tc.want && len(v.Findings) != 0) {
			t.Errorf("%s: verdict %+v, want the warning: %v", tc.name, v, tc.want)
		}
	}
}
