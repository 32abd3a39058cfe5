//go:build linux

package main

import (
	"bytes"
	"context"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"
)

// nobody is the uid and gid of user nobody (Debian's 65534).
const nobody = 65534

// asNobody runs the built binary as user nobody, as `runuser -u nobody --`
// would; the test runs as root, as make test does.
func asNobody(t *testing.T, timeout time.Duration, args ...string) (code int, stdout, stderr string) {
	t.Helper()
	if os.Geteuid() != 0 {
		t.Skip("needs root to run a command as nobody") // make test runs as root
	}
	// The binary's directory is private to its builder (MkdirTemp: 0700).
	if err := os.Chmod(filepath.Dir(binary), 0o755); err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(t.Context(), timeout)
	defer cancel()
	cmd := exec.CommandContext(ctx, binary, args...)
	cmd.Dir = "/"
	cmd.Env = []string{"PATH=/usr/bin:/bin", "HOME=/nonexistent"}
	cmd.SysProcAttr = &syscall.SysProcAttr{Credential: &syscall.Credential{Uid: nobody, Gid: nobody}}
	var out, errOut bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &errOut
	err := cmd.Run()
	if ee, ok := err.(*exec.ExitError); ok {
		code = ee.ExitCode()
	} else if err != nil && ctx.Err() == nil {
		t.Fatal(err)
	}
	return code, out.String(), errOut.String()
}

// openDir makes a test directory others may enter (t.TempDir is 0700).
func openDir(t *testing.T) string {
	t.Helper()
	dir, err := os.MkdirTemp("", "clockwatch-nonroot-") // t.TempDir's parent is 0700
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.RemoveAll(dir) })
	if err := os.Chmod(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	return dir
}

// TestMessagesForNonRoot: what a user who is not root meets. events on a
// journal directory closed to them names that directory and the group to
// join, not a file that does not exist; watch on a socket outside their
// groups names the socket's group; watch with no daemon says "unknown: is
// clockwatch running?" once, not the dial error at every retry.
func TestMessagesForNonRoot(t *testing.T) {
	t.Parallel()
	base := openDir(t)
	state := filepath.Join(base, "state")
	if err := os.Mkdir(state, 0o750); err != nil { // as StateDirectory= makes it
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(state, "events.jsonl"), nil, 0o640); err != nil {
		t.Fatal(err)
	}
	conf := filepath.Join(base, "clockwatch.yml")
	if err := os.WriteFile(conf, []byte("journal:\n  dir: "+state+"\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	code, _, errOut := asNobody(t, 10*time.Second, "events", "--config.file="+conf)
	if code != 1 || strings.Contains(errOut, "events.jsonl.1") ||
		!strings.Contains(errOut, "permission denied reading the journal under "+state+": it belongs to group root (mode 0750): run as root, or join the group (sudo usermod -aG root $USER") {
		t.Errorf("events as nobody: exit %d, stderr %q", code, errOut)
	}

	// A socket only root's group may use (0660 root:root).
	sock := filepath.Join(base, "stepdown.sock")
	l, err := net.Listen("unix", sock)
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	if err := os.Chmod(sock, 0o660); err != nil {
		t.Fatal(err)
	}
	_, out, _ := asNobody(t, 2*time.Second, "watch", "--config.file=", "--socket", sock)
	if !strings.Contains(out, "unknown: permission denied on "+sock+": it belongs to group root (mode 0660): run as root, or join the group") {
		t.Errorf("watch as nobody on a root:root 0660 socket: stdout %q, want the group to join", out)
	}

	// No daemon: one line for the outage, whatever the retries.
	none := filepath.Join(base, "none.sock")
	_, out, _ = asNobody(t, 3*time.Second, "watch", "--config.file=", "--socket", none)
	want := "unknown: is clockwatch running? No stepdown socket at " + none
	if n := strings.Count(out, want); n != 1 || strings.Count(out, "\n") != 1 {
		t.Errorf("watch without a daemon for 3 s: stdout %q, want one line %q", out, want)
	}
}
