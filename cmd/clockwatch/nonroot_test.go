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
	"sync"
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
	// Root's group: joining it is no fix (before: "sudo usermod -aG root
	// $USER").
	code, _, errOut := asNobody(t, 10*time.Second, "events", "--config.file="+conf)
	if code != 1 || strings.Contains(errOut, "events.jsonl.1") || strings.Contains(errOut, "usermod -aG root") ||
		!strings.Contains(errOut, "permission denied reading the journal under "+state+": it belongs to root's group (mode 0750): the daemon runs as root, or a run as root made it; run this as root (sudo), or give the daemon stepdown.group") {
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
	if !strings.Contains(out, "unknown: permission denied on "+sock+": it belongs to root's group (mode 0660)") || strings.Contains(out, "usermod") ||
		!strings.Contains(out, "stepdown.group") {
		t.Errorf("watch as nobody on a root:root 0660 socket: stdout %q, want root's group and stepdown.group named", out)
	}
	// A group of its own: join it.
	if err := os.Chown(sock, 0, 100); err != nil { // Debian's "users"
		t.Fatal(err)
	}
	_, out, _ = asNobody(t, 2*time.Second, "watch", "--config.file=", "--socket", sock)
	if !strings.Contains(out, "(mode 0660): run as root, or join the group (sudo usermod -aG ") || strings.Contains(out, "-aG root") {
		t.Errorf("watch as nobody on a socket of group 100: stdout %q, want the group to join", out)
	}

	// No daemon: one line for the outage, whatever the retries.
	none := filepath.Join(base, "none.sock")
	_, out, _ = asNobody(t, 3*time.Second, "watch", "--config.file=", "--socket", none)
	want := "unknown: is clockwatch running? No stepdown socket at " + none
	if n := strings.Count(out, want); n != 1 || strings.Count(out, "\n") != 1 {
		t.Errorf("watch without a daemon for 3 s: stdout %q, want one line %q", out, want)
	}
	// drill too, plainly (before: the dial error).
	code, _, errOut = asNobody(t, 3*time.Second, "drill", "--config.file=", "--socket", none)
	if code != 1 || !strings.Contains(errOut, "clockwatch drill: "+strings.TrimPrefix(want, "unknown: ")) || strings.Contains(errOut, "dial unix") {
		t.Errorf("drill without a daemon: exit %d, stderr %q, want %q", code, errOut, want)
	}
}

// startAsNobody starts the built binary as user nobody with env (and
// PATH), and returns what it logs; it is stopped when the test ends.
func startAsNobody(t *testing.T, env []string, args ...string) (stop func(), log *syncBuffer) {
	t.Helper()
	if os.Geteuid() != 0 {
		t.Skip("needs root to run a command as nobody") // make test runs as root
	}
	if err := os.Chmod(filepath.Dir(binary), 0o755); err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command(binary, args...)
	cmd.Dir = "/"
	cmd.Env = append([]string{"PATH=/usr/bin:/bin"}, env...)
	cmd.SysProcAttr = &syscall.SysProcAttr{Credential: &syscall.Credential{Uid: nobody, Gid: nobody}, Pdeathsig: syscall.SIGKILL}
	log = &syncBuffer{}
	cmd.Stdout, cmd.Stderr = log, log
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	done := make(chan struct{})
	go func() { cmd.Wait(); close(done) }()
	stop = func() {
		cmd.Process.Signal(syscall.SIGTERM)
		select {
		case <-done:
		case <-time.After(10 * time.Second):
			cmd.Process.Kill()
			<-done
		}
	}
	t.Cleanup(stop)
	return stop, log
}

// syncBuffer is a bytes.Buffer a process writes while the test reads it.
type syncBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (s *syncBuffer) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.Write(p)
}

func (s *syncBuffer) String() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.String()
}

// nobodysDir makes a directory owned by nobody, mode 0700.
func nobodysDir(t *testing.T) string {
	t.Helper()
	dir := filepath.Join(openDir(t), "own")
	if err := os.Mkdir(dir, 0o700); err != nil {
		t.Fatal(err)
	}
	if err := os.Chown(dir, nobody, nobody); err != nil {
		t.Fatal(err)
	}
	return dir
}

// TestNonRootDevLoop: a user other than root runs the daemon with no
// environment and no configuration (the README's `go run ./cmd/clockwatch`),
// and, in another shell, status, events and drill: they reach that daemon
// and its journal without RUNTIME_DIRECTORY or STATE_DIRECTORY. Before the
// fix the daemon could not open /run/clockwatch and /var/lib/clockwatch,
// and the subcommands looked there ("is clockwatch running?").
func TestNonRootDevLoop(t *testing.T) {
	t.Parallel()
	home, xdg := nobodysDir(t), nobodysDir(t)
	env := []string{"HOME=" + home, "XDG_RUNTIME_DIR=" + xdg}
	_, log := startAsNobody(t, env, "--config.file=", "--web.listen-address=127.0.0.1:0")
	sock := filepath.Join(xdg, "clockwatch", "stepdown.sock")
	deadline := time.Now().Add(20 * time.Second)
	for {
		if _, err := os.Stat(sock); err == nil {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("no socket at %s after 20 s; the daemon logged:\n%s", sock, log)
		}
		time.Sleep(50 * time.Millisecond)
	}
	// The line is logged before the socket is made, but the test reads
	// the daemon's stderr through a pipe: it may not be in log yet.
	said := `msg="not root: using this user's own directory, where its subcommands look too" dir=` + filepath.Join(xdg, "clockwatch")
	for !strings.Contains(log.String(), said) {
		if time.Now().After(deadline) {
			t.Errorf("the daemon does not say which directory it uses:\n%s", log)
			break
		}
		time.Sleep(50 * time.Millisecond)
	}
	run := func(args ...string) (int, string, string) {
		t.Helper()
		ctx, cancel := context.WithTimeout(t.Context(), 15*time.Second)
		defer cancel()
		cmd := exec.CommandContext(ctx, binary, args...)
		cmd.Dir = "/"
		cmd.Env = append([]string{"PATH=/usr/bin:/bin"}, env...)
		cmd.SysProcAttr = &syscall.SysProcAttr{Credential: &syscall.Credential{Uid: nobody, Gid: nobody}}
		var out, errOut bytes.Buffer
		cmd.Stdout, cmd.Stderr = &out, &errOut
		err := cmd.Run()
		code := 0
		if ee, ok := err.(*exec.ExitError); ok {
			code = ee.ExitCode()
		}
		return code, out.String(), errOut.String()
	}
	_, out, _ := run("status", "--config.file=")
	if first, _, _ := strings.Cut(out, "\n"); strings.Contains(first, "unknown") || !strings.HasPrefix(first, "Stepdown state : ") {
		t.Errorf("status as the same user: %q, want the daemon's state", first)
	}
	// The journal is empty unless this host's clock was set while the test
	// ran (seen: three real 500 µs sets in one second, "seen=both"); then
	// events prints them, and the daemon's journal under home holds them.
	_, out, errOut := run("events", "--config.file=")
	journal := filepath.Join(home, ".local", "state", "clockwatch")
	if strings.Contains(out, " seq=") {
		if _, err := os.Stat(filepath.Join(journal, "events.jsonl")); err != nil {
			t.Errorf("events as the same user printed events, but the daemon's journal %s has none: %v\n%s", journal, err, out)
		}
	} else if want := "under " + journal; !strings.Contains(out+errOut, want) {
		t.Errorf("events as the same user: stdout %q, stderr %q, want the journal %s", out, errOut, want)
	}
	_, _, errOut = run("drill", "--config.file=", "--hold", "1s")
	if strings.Contains(errOut, "is clockwatch running") || strings.Contains(errOut, "permission denied") {
		t.Errorf("drill as the same user did not reach the daemon: %q", errOut)
	}
}

// TestClosedStateDirNamed: a daemon whose state directory is closed to its
// user (a run as root made it 0750) says so, naming the directory, not a
// file in it that does not exist (before: "open DIR/events.jsonl.1:
// permission denied", with no events.jsonl.1 there).
func TestClosedStateDirNamed(t *testing.T) {
	t.Parallel()
	state := filepath.Join(openDir(t), "state")
	if err := os.Mkdir(state, 0o750); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(state, "events.jsonl"), nil, 0o640); err != nil {
		t.Fatal(err)
	}
	stop, log := startAsNobody(t, []string{"STATE_DIRECTORY=" + state, "RUNTIME_DIRECTORY=" + nobodysDir(t)},
		"--config.file=", "--web.listen-address=127.0.0.1:0")
	deadline := time.Now().Add(20 * time.Second)
	for !strings.Contains(log.String(), "Cannot read the event journal") && time.Now().Before(deadline) {
		time.Sleep(50 * time.Millisecond)
	}
	stop()
	if l := log.String(); strings.Contains(l, "events.jsonl.1: permission denied") ||
		!strings.Contains(l, "reading the event journal: cannot look for events.jsonl.1 or events.jsonl in "+state+": permission denied") {
		t.Errorf("the daemon's log, its state directory closed to it:\n%s", l)
	}
}
