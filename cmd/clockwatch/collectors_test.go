//go:build linux

package main

import (
	"bytes"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/clockwatch/clockwatch/internal/chronydtest"
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

// TestChronyAddressFlag runs the daemon with --chrony.address naming a real
// chronyd -x's socket over a file whose chrony.address names a socket that
// does not exist: the flag wins, at the start and after a reload of the file
// (as the --collector.* switches do), and status reads the same chronyd.
func TestChronyAddressFlag(t *testing.T) {
	t.Parallel()
	c := chronydtest.Start(t, chronydtest.Options{})
	dir := t.TempDir()
	f := filepath.Join(dir, "clockwatch.yml")
	conf := "chrony:\n  address: " + filepath.Join(dir, "no-chronyd.sock") + "\n  conf_path: \"\"\n  poll_interval: 250ms\n  timeout: 200ms\nntpd:\n  enabled: false\n"
	if err := os.WriteFile(f, []byte(conf), 0o644); err != nil {
		t.Fatal(err)
	}
	p := startDaemon(t, "--config.file="+f, "--chrony.address="+c.Socket)
	p.waitMetric(t, "clockwatch_chrony_up", func(v string) bool { return v == "1" })
	_, body := p.get(t, "/metrics")
	loaded, _ := metricValue(body, "clockwatch_config_last_reload_success_timestamp_seconds")
	time.Sleep(1100 * time.Millisecond) // the timestamp has a resolution of seconds, perhaps
	if err := p.cmd.Process.Signal(syscall.SIGHUP); err != nil {
		t.Fatal(err)
	}
	p.waitMetric(t, "clockwatch_config_last_reload_success_timestamp_seconds", func(v string) bool { return v != loaded })
	time.Sleep(time.Second) // four polls at the reloaded configuration
	_, body = p.get(t, "/metrics")
	if v, _ := metricValue(body, "clockwatch_chrony_up"); v != "1" {
		t.Errorf("after a reload: clockwatch_chrony_up %q, want 1 (the flag still wins over the file)", v)
	}

	code, out, errOut := inProcess(nil, "")(t, 10*time.Second, "status", "--config.file="+f, "--chrony.address="+c.Socket)
	if !strings.Contains(out, "chronyd        : reference") || strings.Contains(out, "cannot read chrony") {
		t.Errorf("status --chrony.address=%s: exit %d, stdout\n%s\nstderr %s\nwant chronyd read", c.Socket, code, out, errOut)
	}
}
