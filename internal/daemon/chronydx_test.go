package daemon_test

import (
	"fmt"
	"net"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/clockwatch/clockwatch/internal/chronydtest"
	"github.com/clockwatch/clockwatch/internal/daemontest"
	"github.com/clockwatch/clockwatch/internal/testtool"
	"github.com/clockwatch/clockwatch/stepdown"
)

// TestStartNextToChronydX starts clockwatch with its default triggers
// (error_bound on) next to a real chronyd -x, which never disciplines the
// kernel: the kernel's maxerror stays at 16 s. Before the fix every start
// stepped down ("clock error bound 16s from kernel is over 1s", before
// chronyd's first poll) and held 30 s of hold-down. The start must wait for
// chronyd's first poll and then say ok, never stepdown, and never name the
// kernel: both when chronyd is synchronised already and when it has not
// yet polled its server when clockwatch starts.
func TestStartNextToChronydX(t *testing.T) {
	t.Parallel()
	testtool.Short(t)
	bin := daemontest.Build(t)
	for _, tc := range []struct {
		name string
		// silentFor keeps chronyd's server silent this long after
		// clockwatch's start: chronyd answers, unsynchronised, meanwhile.
		silentFor time.Duration
		// stoppedFor keeps chronyd stopped (SIGSTOP) this long after
		// clockwatch's start: clockwatch's first poll of chronyd waits
		// for its answer meanwhile (chrony.timeout is longer).
		stoppedFor time.Duration
		// poll is chrony.poll_interval and chrony.timeout: long enough
		// that no poll times out on a loaded machine (a failed first poll
		// is probe_lost from the start, rightly, and not this test's).
		poll string
	}{
		{name: "before clockwatch's first poll of chronyd", stoppedFor: time.Second, poll: "3s"},
		{name: "before chronyd's first poll of its server", silentFor: 2 * time.Second, poll: "1s"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			// A drift file, as on a host where chronyd ran before.
			c := chronydtest.Start(t, chronydtest.Options{Silent: tc.silentFor > 0, Drift: "0.000 1.000"})
			if tc.silentFor == 0 {
				waitSettled(t, c)
			}
			conf := writeConf(t, fmt.Sprintf("chrony:\n  address: %s\n  conf_path: \"\"\n  poll_interval: %s\n  timeout: %[2]s\n", c.Socket, tc.poll))
			// The socket is passed as systemd's socket activation does,
			// so the client hears the start from its first moment.
			rt := t.TempDir()
			f := listenUnix(t, filepath.Join(rt, "stepdown.sock"))
			w := watch(t, filepath.Join(rt, "stepdown.sock"))
			w.waitConnected(t)
			if tc.stoppedFor > 0 {
				signal(t, c.PID(), syscall.SIGSTOP)
				t.Cleanup(func() { syscall.Kill(c.PID(), syscall.SIGCONT) })
			}
			d := daemontest.Start(t, bin, daemontest.Options{RuntimeDir: rt, Stepdown: f, Args: []string{"--config.file=" + conf}})
			if tc.silentFor > 0 {
				time.Sleep(tc.silentFor)
				c.SetSilent(false)
			}
			if tc.stoppedFor > 0 {
				time.Sleep(tc.stoppedFor)
				signal(t, c.PID(), syscall.SIGCONT)
			}
			msgs := w.wait(t, "the first verdict", 20*time.Second, func(m stepdown.Message) bool { return m.State != stepdown.StateUnknown })
			// Any stepdown would come at once: give it a few polls.
			time.Sleep(2 * time.Second)
			msgs = w.wait(t, "nothing", 0, func(stepdown.Message) bool { return true })
			t.Logf("the client received:\n%s", lines(msgs))
			for _, m := range msgs {
				if m.State == stepdown.StateStepdown || m.Source == "kernel" || m.ErrorBoundSeconds != nil {
					t.Errorf("told %s next to chronyd -x; log:\n%s", m, d.Log())
				}
			}
			// The hello carries the verdict when the socket's first accept
			// comes after it (the daemon's tasks start together).
			var verdict stepdown.Message
			for _, m := range msgs {
				if m.State != stepdown.StateUnknown {
					verdict = m
					break
				}
			}
			if !(verdict.Type == stepdown.TypeResume && verdict.Reason == stepdown.ReasonStarting) &&
				!(verdict.Type == stepdown.TypeHello && verdict.State == stepdown.StateOK) {
				t.Errorf("first verdict %s, want resume starting (or a hello in state ok)", verdict)
			}
			if !strings.Contains(d.Log(), "msg=\"stepdown event\" component=stepdown type=resume") {
				t.Errorf("no resume logged; log:\n%s", d.Log())
			}
		})
	}
}

// listenUnix listens on a unix socket at path and returns it as a file to
// pass to the daemon (socket activation); the path stays when it closes.
func listenUnix(t *testing.T, path string) *os.File {
	t.Helper()
	l, err := net.ListenUnix("unix", &net.UnixAddr{Name: path, Net: "unix"})
	if err != nil {
		t.Fatal(err)
	}
	l.SetUnlinkOnClose(false)
	f, err := l.File()
	l.Close()
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { f.Close() })
	return f
}

func signal(t *testing.T, pid int, sig syscall.Signal) {
	t.Helper()
	if pid == 0 {
		t.Fatal("chronyd is not running")
	}
	if err := syscall.Kill(pid, sig); err != nil {
		t.Fatalf("%v to chronyd: %v", sig, err)
	}
}

// waitSettled waits until chronyd has selected its server and knows its
// frequency: just after its first update its skew is 10⁶ ppm, so that its
// error bound grows by a second every second it is not updated (stopped).
func waitSettled(t *testing.T, c *chronydtest.Chronyd) {
	t.Helper()
	waitSynced(t, c)
	deadline := time.Now().Add(20 * time.Second)
	for {
		rows, err := c.Chronyc("-c", "tracking")
		if err == nil && len(rows) > 0 && len(rows[0]) > 13 {
			if skew, err := strconv.ParseFloat(rows[0][9], 64); err == nil && skew < 100 {
				return
			}
		}
		if time.Now().After(deadline) {
			t.Fatalf("chronyd's skew stayed over 100 ppm for 20s (%v %v)", rows, err)
		}
		time.Sleep(50 * time.Millisecond)
	}
}
