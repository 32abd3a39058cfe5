//go:build linux

package main

import (
	"bufio"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/clockwatch/clockwatch/internal/daemontest"
	"github.com/clockwatch/clockwatch/internal/testtool"
)

// TestSocatWalkthrough runs docs/stepdown-protocol.md's "Trying it with
// socat" as written, against a real daemon: socat connected to the socket,
// `clockwatch drill` from another process, an ack and a drill typed into
// socat, and a mistake. Holds are 1 s instead of the doc's 5 and 2 to keep it
// short. The daemon runs with the configuration of a host without a time
// daemon (docs/install.md), so that its state is ok and drills are allowed
// on a test machine nobody disciplines.
func TestSocatWalkthrough(t *testing.T) {
	t.Parallel()
	socat := testtool.Require(t, "socat")
	dir := t.TempDir()
	conf := filepath.Join(dir, "clockwatch.yml")
	// No chronyd: off. A pinned address with nothing there is a lost
	// probe (stepdown probe_lost), not an absent source.
	yml := "chrony:\n  enabled: false\n" +
		"stepdown:\n  triggers:\n    unsynchronized: {enabled: false}\n    error_bound: {enabled: false}\n"
	if err := os.WriteFile(conf, []byte(yml), 0o644); err != nil {
		t.Fatal(err)
	}
	d := daemontest.Start(t, binary, daemontest.Options{Args: []string{"--config.file=" + conf}})

	// $ socat - UNIX-CONNECT:/run/clockwatch/stepdown.sock
	cmd := exec.Command(socat, "-", "UNIX-CONNECT:"+d.StepdownSocket())
	stdin, err := cmd.StdinPipe()
	if err != nil {
		t.Fatal(err)
	}
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	var stderr testtool.SyncBuffer
	cmd.Stderr = &stderr
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		stdin.Close()
		cmd.Process.Kill()
		cmd.Wait()
	})
	lines := make(chan string, 256)
	go func() {
		defer close(lines)
		sc := bufio.NewScanner(stdout)
		for sc.Scan() {
			lines <- sc.Text()
		}
	}()
	var seen []string
	// next returns the next line socat printed that matches want (every
	// key with that value), failing after 15 s.
	next := func(what string, want map[string]any) map[string]any {
		t.Helper()
		deadline := time.After(15 * time.Second)
		for {
			select {
			case l, ok := <-lines:
				if !ok {
					t.Fatalf("socat ended waiting for %s; it printed:\n%s\nstderr: %s", what, strings.Join(seen, "\n"), stderr.String())
				}
				seen = append(seen, l)
				var m map[string]any
				if err := json.Unmarshal([]byte(l), &m); err != nil {
					t.Fatalf("socat printed a line that is not JSON: %q", l)
				}
				if matches(m, want) {
					return m
				}
			case <-deadline:
				t.Fatalf("no %s within 15 s; socat printed:\n%s", what, strings.Join(seen, "\n"))
			}
		}
	}
	send := func(line string) {
		t.Helper()
		if _, err := io.WriteString(stdin, line+"\n"); err != nil {
			t.Fatalf("typing %s into socat: %v", line, err)
		}
	}

	hello := next("hello", map[string]any{"type": "hello", "version": 1.0})
	for _, k := range []string{"state", "epoch", "seq", "heartbeat_seconds", "hold_down_seconds"} {
		if _, ok := hello[k]; !ok {
			t.Errorf("the hello lacks %q: %v", k, hello)
		}
	}
	next("heartbeat", map[string]any{"type": "heartbeat"})
	next("state ok", map[string]any{"state": "ok"}) // a hello, resume or heartbeat: the daemon is ready

	// In another terminal, `sudo clockwatch drill --reason step --step -12.4s`.
	drill := exec.Command(binary, "drill", "--socket", d.StepdownSocket(), "--reason", "step", "--step", "-12.4s", "--hold", "3s")
	drillDone := make(chan error, 1)
	var drillOut testtool.SyncBuffer
	drill.Stdout, drill.Stderr = &drillOut, &drillOut
	if err := drill.Start(); err != nil {
		t.Fatal(err)
	}
	go func() { drillDone <- drill.Wait() }()
	sd := next("the drill's stepdown", map[string]any{"type": "stepdown", "state": "stepdown", "reason": "step", "drill": true, "step_seconds": -12.4})
	for _, k := range []string{"mono_ns", "detail", "hold_seconds"} {
		if _, ok := sd[k]; !ok {
			t.Errorf("the drill's stepdown lacks %q: %v", k, sd)
		}
	}
	next("a heartbeat in stepdown", map[string]any{"type": "heartbeat", "state": "stepdown", "drill": true})

	// Type an ack and press enter.
	send(fmt.Sprintf(`{"type":"ack","seq":%v}`, sd["seq"]))
	next("the drill's resume", map[string]any{"type": "resume", "state": "ok", "reason": "drill", "drill": true, "detail": "drill over"})
	if err := <-drillDone; err != nil {
		t.Errorf("clockwatch drill: %v\n%s", err, drillOut.String())
	}

	// A drill can be requested with socat too, as root.
	send(`{"type":"drill","reason":"offset","hold_seconds":1}`)
	next("the socat drill's stepdown", map[string]any{"type": "stepdown", "reason": "offset", "drill": true})
	next("the socat drill's resume", map[string]any{"type": "resume", "state": "ok", "drill": true})

	// Mistakes are answered.
	send(`{"type":"hello"}`)
	e := next("the error", map[string]any{"type": "error", "code": "unknown_type"})
	if msg, _ := e["error"].(string); msg != `clients may send ack, drill or watch_peer, not "hello"` {
		t.Errorf("the error says %q", msg)
	}
	t.Logf("socat printed:\n%s", strings.Join(seen, "\n"))
}

// matches reports whether m has every key of want with that value.
func matches(m, want map[string]any) bool {
	for k, v := range want {
		if m[k] != v {
			return false
		}
	}
	return true
}
