package main

import (
	"path/filepath"
	"strings"
	"testing"
	"testing/fstest"

	"github.com/clockwatch/clockwatch/internal/health"
	"github.com/clockwatch/clockwatch/internal/probe"
	"github.com/clockwatch/clockwatch/internal/stepdown/server"
	"github.com/clockwatch/clockwatch/internal/timesource"
)

// status audits the chrony.conf chronyd runs, and none when chronyd does not
// run: the stock /etc/chrony/chrony.conf of a host without chronyd says
// nothing about its clock.
func TestAuditRunningChrony(t *testing.T) {
	t.Parallel()
	conf, err := filepath.Abs("testdata/chrony.conf")
	if err != nil {
		t.Fatal(err)
	}
	none := fstest.MapFS{"1/comm": {Data: []byte("init\n")}, "1/cmdline": {Data: []byte("/sbin/init\x00")}}
	if got := auditRunningChrony(none, "/etc/chrony/chrony.conf"); got != nil {
		t.Errorf("no chronyd running: findings %v, want none", got)
	}
	running := fstest.MapFS{"812/comm": {Data: []byte("chronyd\n")}, "812/cmdline": {Data: []byte("/usr/sbin/chronyd\x00-f\x00" + conf + "\x00")}}
	got := auditRunningChrony(running, "/nonexistent/chrony.conf")
	var texts []string
	for _, f := range got {
		texts = append(texts, f.Text)
	}
	if len(got) == 0 || strings.Contains(strings.Join(texts, "\n"), "Cannot audit") {
		t.Errorf("chronyd runs with -f %s: findings %q, want that file's audit", conf, texts)
	}
	if got := auditRunningChrony(running, ""); got != nil {
		t.Errorf("audit off (conf_path \"\"): findings %v, want none", got)
	}
}

// On a host nobody disciplines, status carries the daemon's start WARN, as a
// WARNING; with a time daemon answering, or the triggers off, it does not.
func TestStatusSaysUndisciplined(t *testing.T) {
	t.Parallel()
	undisciplined := &probe.Timex{State: probe.TimeError, Status: probe.StatusUnsync, MaxError: probe.MaxErrorSaturated}
	sd := server.DefaultConfig()
	off := sd
	off.Triggers.Unsynchronized.Enabled, off.Triggers.ErrorBound.Enabled = false, false
	for _, tc := range []struct {
		name string
		f    health.Facts
		sd   server.Config
		want bool
	}{
		{"no time daemon", health.Facts{Kernel: undisciplined}, sd, true},
		{"chronyd answers", health.Facts{Kernel: undisciplined, Sources: timesource.Set{"chrony": {Source: "chrony", Found: true, Up: true, HasData: true}}}, sd, false},
		{"triggers off", health.Facts{Kernel: undisciplined}, off, false},
	} {
		v := withUndisciplined(health.Verdict{}, tc.f, tc.sd)
		want := health.UndisciplinedWarning(tc.sd)
		got := len(v.Findings) == 1 && v.Findings[0].Reason == want && v.Level == health.Warning
		if got != tc.want || (!tc.want && len(v.Findings) != 0) {
			t.Errorf("%s: verdict %+v, want the warning: %v", tc.name, v, tc.want)
		}
	}
}
