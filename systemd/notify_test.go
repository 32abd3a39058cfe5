package systemd_test

import (
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/clockwatch/clockwatch/internal/sdnotify/sdnotifytest"
	"github.com/clockwatch/clockwatch/internal/testtool"
)

// build compiles the Go package at pkg (relative to this directory) into
// the test's temporary directory.
func build(t *testing.T, pkg string) string {
	t.Helper()
	bin := filepath.Join(t.TempDir(), filepath.Base(pkg))
	cmd := exec.Command("go", "build", "-o", bin, pkg)
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("go build %s: %v\n%s", pkg, err, out)
	}
	return bin
}

// checkNotifyProtocol runs bin as systemd would run a Type=notify service
// with WatchdogSec= set, against a fake notification socket, and follows the
// protocol through start-up, watchdog pings, a SIGHUP reload and a SIGTERM
// stop.
func checkNotifyProtocol(t *testing.T, bin string, env []string, args ...string) {
	t.Helper()
	sock := sdnotifytest.Listen(t)
	cmd := exec.Command(bin, args...)
	const watchdog = 200 * time.Millisecond
	cmd.Env = append(append(os.Environ(), env...),
		"NOTIFY_SOCKET="+sock.Addr,
		"WATCHDOG_USEC="+strings.TrimSuffix(watchdog.String(), "ms")+"000",
	)
	var stderr testtool.SyncBuffer
	cmd.Stderr = &stderr
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	var waitErr error
	exited := make(chan struct{})
	go func() {
		waitErr = cmd.Wait()
		close(exited)
	}()
	t.Cleanup(func() {
		select {
		case <-exited:
		default:
			cmd.Process.Kill()
			<-exited
		}
		if t.Failed() {
			t.Logf("%s stderr:\n%s", bin, stderr.String())
		}
	})
	const timeout = 10 * time.Second

	start := time.Now()
	ready := sock.WaitForLine(t, timeout, "READY=1")
	t.Logf("READY=1 after %v", time.Since(start))
	status := ""
	for _, l := range ready {
		if s, ok := strings.CutPrefix(l, "STATUS="); ok {
			status = s
		}
	}
	if status == "" {
		for _, l := range sock.WaitFor(t, timeout, "a STATUS line", func(l string) bool { return strings.HasPrefix(l, "STATUS=") }) {
			if s, ok := strings.CutPrefix(l, "STATUS="); ok {
				status = s
			}
		}
	}
	if strings.TrimSpace(status) == "" {
		t.Errorf("empty STATUS line")
	}
	t.Logf("STATUS=%s", status)

	pings := time.Now()
	for range 3 {
		sock.WaitForLine(t, timeout, "WATCHDOG=1")
	}
	if d := time.Since(pings); d > 3*watchdog {
		t.Errorf("3 watchdog pings took %v with WATCHDOG_USEC at %v: want one every %v", d, watchdog, watchdog/2)
	}

	if err := cmd.Process.Signal(syscall.SIGHUP); err != nil {
		t.Fatal(err)
	}
	sock.WaitForLine(t, timeout, "RELOADING=1")
	sock.WaitForLine(t, timeout, "READY=1")

	if err := cmd.Process.Signal(syscall.SIGTERM); err != nil {
		t.Fatal(err)
	}
	sock.WaitForLine(t, timeout, "STOPPING=1")
	select {
	case <-exited:
		if waitErr != nil {
			t.Errorf("%s exited with %v after SIGTERM, want 0", bin, waitErr)
		}
	case <-time.After(timeout):
		t.Errorf("%s did not exit within %v of SIGTERM", bin, timeout)
	}
}

// TestNotifyProtocol runs testdata/notifydemo, a program wired to
// internal/sdnotify the way the daemon is meant to be.
func TestNotifyProtocol(t *testing.T) {
	t.Parallel()
	testtool.Short(t)
	checkNotifyProtocol(t, build(t, "./testdata/notifydemo"), nil)
}

// TestDaemonNotifyProtocol runs the real daemon through the same protocol.
func TestDaemonNotifyProtocol(t *testing.T) {
	t.Parallel()
	testtool.Short(t)
	// The journal and the stepdown socket go where systemd's StateDirectory=
	// and RuntimeDirectory= would put them, never the machine's.
	checkNotifyProtocol(t, build(t, "../cmd/clockwatch"),
		[]string{"STATE_DIRECTORY=" + t.TempDir(), "RUNTIME_DIRECTORY=" + t.TempDir()},
		"--web.listen-address=127.0.0.1:0")
}
