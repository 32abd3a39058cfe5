//go:build linux

package main

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/clockwatch/clockwatch/stepdown"
)

// TestStatusAsksTheDaemon is the case: with the triggers relaxed the
// daemon tells lock holders ok while status, judging by its own thresholds,
// may say otherwise. Status prints first what the daemon says (state, since,
// epoch, subscribers), and when the two differ, says so and why.
func TestStatusAsksTheDaemon(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	socket := filepath.Join(dir, "stepdown.sock")
	conf := filepath.Join(dir, "clockwatch.yml")
	yml := "chrony:\n  address: " + filepath.Join(dir, "no-chronyd.sock") + "\n  conf_path: \"\"\nstepdown:\n  socket: " + socket +
		"\n  triggers:\n    error_bound: {enabled: false}\n    unsynchronized: {enabled: false}\n    probe_lost: {enabled: false}\n"
	if err := os.WriteFile(conf, []byte(yml), 0o644); err != nil {
		t.Fatal(err)
	}
	startDaemon(t, "--config.file="+conf)
	// A lock holder, connected: status counts it, not itself.
	var holder *stepdown.Conn
	for deadline := time.Now().Add(10 * time.Second); ; {
		c, err := stepdown.Dial(t.Context(), socket)
		if err == nil {
			holder = c
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("the daemon's socket %s: %v", socket, err)
		}
		time.Sleep(50 * time.Millisecond)
	}
	defer holder.Close()
	for {
		m, err := holder.Read()
		if err != nil {
			t.Fatal(err)
		}
		if m.State == stepdown.StateOK {
			break // the start is over
		}
	}

	code, out, errOut := inProcess(nil, "")(t, 10*time.Second, "status", "--config.file="+conf)
	lines := strings.Split(out, "\n")
	if !strings.HasPrefix(lines[0], "Stepdown state : ok, since ") || !strings.Contains(out, "\nClock epoch    : ") ||
		!strings.Contains(out, "\nSubscribers    : 1 connected (besides this status)\n") {
		t.Errorf("status: exit %d, stdout\n%s\nstderr %s\nwant the daemon's state first, its epoch and 1 subscriber", code, out, errOut)
	}
	differ := strings.Contains(out, "\nVerdicts differ: status says ")
	t.Logf("status:\n%s", out)
	if code != 0 && (!differ || !strings.Contains(out, "lock holders are told ok")) || code == 0 && differ {
		t.Errorf("status exit %d and the daemon's ok: stdout\n%s\nwant a 'Verdicts differ' line exactly when status is not OK", code, out)
	}

	// No daemon: said plainly, with what to do.
	gone := filepath.Join(dir, "gone.yml")
	if err := os.WriteFile(gone, []byte(strings.Replace(yml, socket, filepath.Join(dir, "none.sock"), 1)), 0o644); err != nil {
		t.Fatal(err)
	}
	_, out, _ = inProcess(nil, "")(t, 10*time.Second, "status", "--config.file="+gone)
	if !strings.HasPrefix(out, "Stepdown state : unknown: is clockwatch running? No stepdown socket at "+filepath.Join(dir, "none.sock")) {
		t.Errorf("status without a daemon: stdout\n%s\nwant 'unknown: is clockwatch running?' first", out)
	}
}
