package main

import (
	"bytes"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestCollectorSwitches runs the daemon with --no-collector.chrony over a
// file that enables chrony, and with --collector.ntpd over one that turns
// ntpd off (pinned to a loopback port nobody serves, so that it exports
// clockwatch_ntpd_up 0 rather than nothing, as "auto" would): the switches
// win over the file.
func TestCollectorSwitches(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	f := filepath.Join(dir, "clockwatch.yml")
	conf := "chrony:\n  address: " + filepath.Join(dir, "no-chronyd.sock") + "\n  conf_path: \"\"\nptp:\n  enabled: false\nntpd:\n  enabled: false\n  address: 127.0.0.1:1\n"
	if err := os.WriteFile(f, []byte(conf), 0o644); err != nil {
		t.Fatal(err)
	}
	p := startDaemon(t, "--config.file="+f, "--no-collector.chrony", "--collector.ntpd")
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
