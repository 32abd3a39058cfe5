package main

import (
	"bytes"
	"strings"
	"testing"
)

// TestCollectorSwitches runs the daemon with --no-collector.chrony over a
// file that enables chrony, and with --collector.ntpd over one that does
// not enable ntpd: the switches win over the file.
func TestCollectorSwitches(t *testing.T) {
	t.Parallel()
	p := startDaemon(t, noChronyConfig(t), "--no-collector.chrony", "--collector.ntpd")
	p.waitMetric(t, "clockwatch_ntpd_up", func(string) bool { return true })
	_, body := p.get(t, "/metrics")
	if strings.Contains(body, "\nclockwatch_chrony_") {
		t.Error("--no-collector.chrony: /metrics still has clockwatch_chrony_ series")
	}
	if _, ok := metricValue(body, "clockwatch_ntpd_up"); !ok {
		t.Error("--collector.ntpd: /metrics has no clockwatch_ntpd_up")
	}
}

// TestCollectorSwitchErrors checks a switch that cannot apply is refused
// with a message naming it.
func TestCollectorSwitchErrors(t *testing.T) {
	t.Parallel()
	var stdout, stderr bytes.Buffer
	code := run(t.Context(), []string{"--collector.ntp_probes", "--config.check"}, &stdout, &stderr)
	if code != 1 || !strings.Contains(stderr.String(), "--collector.ntp_probes: ntp_probes.servers lists no server") {
		t.Errorf("exit %d, stderr %q: want 1 and the reason", code, stderr.String())
	}
}
