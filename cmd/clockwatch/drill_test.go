//go:build linux

package main

import (
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
)

func TestJoinNegativeValues(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct{ in, want []string }{
		{in: []string{"drill", "--reason", "step", "--step", "-12.4s"}, want: []string{"drill", "--reason", "step", "--step=-12.4s"}},
		{in: []string{"drill", "--step", "3s"}, want: []string{"drill", "--step", "3s"}},
		{in: []string{"drill", "--step", "-.5s"}, want: []string{"drill", "--step=-.5s"}},
		{in: []string{"drill", "--step", "--json"}, want: []string{"drill", "--step", "--json"}},
		{in: []string{"drill", "--", "--step", "-1s"}, want: []string{"drill", "--", "--step", "-1s"}},
	} {
		if diff := cmp.Diff(tc.want, joinNegativeValues(tc.in)); diff != "" {
			t.Errorf("%v (-want +got):\n%s", tc.in, diff)
		}
	}
}

// TestDrillWithoutTimeDaemon: on a host no time daemon keeps (here: every
// daemon source off, and the kernel's error bound over a 1 ns threshold, so
// that it holds on any host), `clockwatch drill` is refused naming exactly
// the settings that let it run; with those set and the configuration
// reloaded, the drill runs. Before the fix it said only "no drill: the state
// is stepdown (unsynchronized), not ok".
func TestDrillWithoutTimeDaemon(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	sock := filepath.Join(dir, "stepdown.sock")
	conf := filepath.Join(dir, "clockwatch.yml")
	write := func(triggers string) {
		t.Helper()
		text := "chrony: {enabled: false}\nntpd: {enabled: false}\nptp: {enabled: false}\ntimesyncd: {mode: off}\n" +
			"stepdown:\n  socket: " + sock + "\n  hold_down: 1s\n  triggers:\n" + triggers
		if err := os.WriteFile(conf, []byte(text), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	write("    error_bound: {enabled: true, threshold: 1ns}\n")
	p := startDaemon(t, "--config.file="+conf)
	var code int
	var errOut string
	deadline := time.Now().Add(20 * time.Second)
	for {
		code, _, errOut = runBinary(t, nil, "drill", "--config.file=", "--socket", sock, "--hold", "1s")
		if !strings.Contains(errOut, "starting") && !strings.Contains(errOut, "no such file") || time.Now().After(deadline) {
			break
		}
		time.Sleep(100 * time.Millisecond)
	}
	want := "set stepdown.triggers.error_bound.enabled: false and stepdown.triggers.unsynchronized.enabled: false"
	if code != 1 || !strings.Contains(errOut, "from kernel), and a drill needs state ok") || !strings.Contains(errOut, want) {
		t.Fatalf("clockwatch drill on a host no daemon keeps: exit %d, stderr %q; want 1 and %q", code, errOut, want)
	}

	// The settings it names, then a reload: the drill runs.
	write("    error_bound: {enabled: false}\n    unsynchronized: {enabled: false}\n")
	if err := p.cmd.Process.Signal(syscall.SIGHUP); err != nil {
		t.Fatal(err)
	}
	var out string
	deadline = time.Now().Add(20 * time.Second)
	for {
		code, out, errOut = runBinary(t, nil, "drill", "--config.file=", "--socket", sock, "--hold", "1s")
		if code == 0 || time.Now().After(deadline) {
			break
		}
		time.Sleep(200 * time.Millisecond)
	}
	if code != 0 || !strings.Contains(out, "stepdown") || !strings.Contains(out, "resume") {
		t.Errorf("clockwatch drill with the triggers off: exit %d, stdout %q, stderr %q; daemon log:\n%s", code, out, errOut, p.Log())
	}
}
