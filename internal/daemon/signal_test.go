package daemon_test

import (
	"context"
	"fmt"
	"net"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/clockwatch/clockwatch/internal/chronydtest"
	"github.com/clockwatch/clockwatch/internal/daemontest"
	"github.com/clockwatch/clockwatch/internal/testtool"
	"github.com/clockwatch/clockwatch/stepdown"
	"golang.org/x/sys/unix"
)

// watcher is a client of the stepdown socket that connects the moment the
// socket accepts connections, even before clockwatch has logged that it has
// started, and records every message but the heartbeats.
type watcher struct {
	mu   sync.Mutex
	msgs []stepdown.Message
	at   []time.Time
	err  error
	conn *stepdown.Conn
}

func watch(t *testing.T, path string) *watcher {
	t.Helper()
	w := &watcher{}
	ctx, cancel := context.WithCancel(context.Background())
	t.Cleanup(cancel)
	go func() {
		for ctx.Err() == nil {
			c, err := stepdown.Dial(ctx, path)
			if err != nil {
				time.Sleep(time.Millisecond)
				continue
			}
			w.mu.Lock()
			w.conn = c
			w.mu.Unlock()
			go func() { <-ctx.Done(); c.Close() }()
			for {
				m, err := c.Read()
				if err != nil {
					w.mu.Lock()
					w.err = err
					w.mu.Unlock()
					return
				}
				if m.Type == stepdown.TypeHeartbeat {
					continue
				}
				w.mu.Lock()
				w.msgs, w.at = append(w.msgs, m), append(w.at, time.Now())
				w.mu.Unlock()
			}
		}
	}()
	return w
}

// waitConnected waits until the client has connected.
func (w *watcher) waitConnected(t *testing.T) {
	t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for {
		w.mu.Lock()
		c := w.conn
		w.mu.Unlock()
		if c != nil {
			return
		}
		if time.Now().After(deadline) {
			t.Fatal("the client did not connect to the stepdown socket in 10s")
		}
		time.Sleep(time.Millisecond)
	}
}

// wait returns the messages once one satisfies done.
func (w *watcher) wait(t *testing.T, what string, timeout time.Duration, done func(stepdown.Message) bool) []stepdown.Message {
	t.Helper()
	deadline := time.Now().Add(timeout)
	for {
		w.mu.Lock()
		msgs, err := append([]stepdown.Message(nil), w.msgs...), w.err
		w.mu.Unlock()
		for _, m := range msgs {
			if done(m) {
				return msgs
			}
		}
		if err != nil || time.Now().After(deadline) {
			t.Fatalf("waiting for %s: %v; messages so far:\n%s", what, err, lines(msgs))
		}
		time.Sleep(5 * time.Millisecond)
	}
}

func lines(msgs []stepdown.Message) string {
	var b strings.Builder
	for _, m := range msgs {
		fmt.Fprintf(&b, "  %s\n", m)
	}
	return b.String()
}

func writeConf(t *testing.T, text string) string {
	t.Helper()
	p := filepath.Join(t.TempDir(), "clockwatch.yml")
	if err := os.WriteFile(p, []byte(text), 0o600); err != nil {
		t.Fatal(err)
	}
	return p
}

// chronyConf reads chronyd every 250 ms. The error bound trigger is off:
// these tests judge chronyd's offset alone (a 2 s offset is also a 2 s
// bound). The kernel's maxerror, at 16 s under chronyd -x, no longer counts
// while chronyd answers nor before its first poll (TestStartNextToChronydX).
func chronyConf(c *chronydtest.Chronyd, holdDown time.Duration) string {
	return fmt.Sprintf(`chrony:
  address: %s
  conf_path: ""
  poll_interval: 250ms
  timeout: 200ms
stepdown:
  hold_down: %s
  triggers:
    error_bound: {enabled: false, threshold: 1s}
`, c.Socket, holdDown)
}

// waitSynced waits until chronyd has selected its server.
func waitSynced(t *testing.T, c *chronydtest.Chronyd) {
	t.Helper()
	deadline := time.Now().Add(20 * time.Second)
	for {
		rows, err := c.Chronyc("-c", "tracking")
		if err == nil && len(rows) > 0 && len(rows[0]) > 13 && rows[0][13] == "Normal" {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("chronyd did not synchronise in 20s (%v %v); log:\n%s", rows, err, c.Logs())
		}
		time.Sleep(50 * time.Millisecond)
	}
}

// TestStartWaitsForEvidence connects a client to the stepdown socket of a
// clockwatch process before it starts (the socket is passed to it as
// systemd's socket activation does): the client must be told nothing but
// unknown until every source (the clocks, the kernel, chronyd's first poll)
// has reported, and then ok or stepdown from that evidence. Before the fix,
// it was told "resume ok" as soon as the clocks were sampled, and
// "stepdown" when chronyd's first poll came in a quarter of a second later.
//
// The daemon's tasks start together, so on a loaded machine chronyd's first
// poll may be in before the socket's first accept: the hello then carries
// the verdict, which must be as truthful. A run that told the client no
// unknown saw nothing of the start; the healthy case tries again then.
func TestStartWaitsForEvidence(t *testing.T) {
	t.Parallel()
	testtool.Short(t)
	bin := daemontest.Build(t)

	t.Run("offset", func(t *testing.T) {
		t.Parallel()
		c := chronydtest.Start(t, chronydtest.Options{})
		c.SetOffset(2 * time.Second) // chronyd -x: the clock seems 2 s slow
		waitSynced(t, c)
		msgs, _ := firstVerdict(t, bin, chronyConf(c, 2*time.Second))
		for _, m := range msgs {
			if m.State == stepdown.StateOK {
				t.Fatalf("told ok with chronyd seeing a 2 s offset:\n%s", lines(msgs))
			}
		}
		last := msgs[len(msgs)-1]
		if last.State != stepdown.StateStepdown || last.Reason != stepdown.ReasonOffset || last.Source != "chrony" ||
			(last.Type != stepdown.TypeStepdown && last.Type != stepdown.TypeHello) {
			t.Errorf("first verdict %s, want a stepdown for chrony's offset", last)
		}
	})

	t.Run("healthy", func(t *testing.T) {
		t.Parallel()
		c := chronydtest.Start(t, chronydtest.Options{})
		waitSynced(t, c)
		const tries = 5
		for try := 1; ; try++ {
			msgs, sawStart := firstVerdict(t, bin, chronyConf(c, 2*time.Second))
			if !sawStart {
				if try == tries {
					t.Fatalf("in %d starts, the socket's first accept came after chronyd's first poll every time: the start was never seen", tries)
				}
				continue
			}
			last := msgs[len(msgs)-1]
			if last.Type != stepdown.TypeResume || last.Reason != stepdown.ReasonStarting ||
				!strings.Contains(last.Detail, "clocks") || !strings.Contains(last.Detail, "kernel") || !strings.Contains(last.Detail, "chrony") {
				t.Errorf("first verdict %s, want a resume once clocks, kernel and chrony have reported", last)
			}
			for _, m := range msgs[:len(msgs)-1] {
				if m.Type != stepdown.TypeHello || m.State != stepdown.StateUnknown {
					t.Errorf("before the verdict: %s, want only a hello in state unknown", m)
				}
			}
			return
		}
	})
}

// firstVerdict connects a client to a stepdown socket, starts clockwatch
// on it with the configuration conf, and returns what the client was told
// up to the first state other than unknown; sawStart says whether the
// client was told unknown first (it saw the start). The daemon is stopped
// before it returns.
func firstVerdict(t *testing.T, bin, conf string) (msgs []stepdown.Message, sawStart bool) {
	t.Helper()
	rt := t.TempDir()
	path := filepath.Join(rt, "stepdown.sock")
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
	defer f.Close()
	w := watch(t, path)
	w.waitConnected(t)
	d := daemontest.Start(t, bin, daemontest.Options{RuntimeDir: rt, Stepdown: f, Args: []string{"--config.file=" + writeConf(t, conf)}})
	msgs = w.wait(t, "the first verdict", 20*time.Second, func(m stepdown.Message) bool { return m.State != stepdown.StateUnknown })
	t.Logf("a client connected before the start received:\n%s", lines(msgs))
	if err := d.Stop(); err != nil {
		t.Errorf("%v; log:\n%s", err, d.Log())
	}
	return msgs, msgs[0].Type == stepdown.TypeHello && msgs[0].State == stepdown.StateUnknown
}

// TestKilledDuringHoldDown kills clockwatch with SIGKILL while chronyd's
// offset holds it in stepdown, and again during the hold-down after the
// offset cleared: each time the process that replaces it must say stepdown
// from its first message, and resume only when the hold-down that began
// before the kill is over. Before the fix the new process said ok at once.
func TestKilledDuringHoldDown(t *testing.T) {
	t.Parallel()
	testtool.Short(t)
	bin := daemontest.Build(t)
	c := chronydtest.Start(t, chronydtest.Options{})
	c.SetOffset(2 * time.Second)
	waitSynced(t, c)
	const hold = 8 * time.Second
	conf := writeConf(t, chronyConf(c, hold))
	state, rt := t.TempDir(), t.TempDir()
	sock := filepath.Join(rt, "stepdown.sock")
	opts := daemontest.Options{StateDir: state, RuntimeDir: rt, Args: []string{"--config.file=" + conf}}

	w := watch(t, sock)
	d := daemontest.Start(t, bin, opts)
	w.wait(t, "the offset stepdown", 20*time.Second, func(m stepdown.Message) bool { return m.Reason == stepdown.ReasonOffset })
	// The state is written just after the announcement (so that the disk
	// never delays a stepdown): kill once it is.
	waitSaved(t, filepath.Join(state, "stepdown.json"), func(s string) bool { return strings.Contains(s, `"state":"stepdown"`) })
	kill(t, d)

	// Restart 1: while the offset still holds.
	w = watch(t, sock)
	d = daemontest.Start(t, bin, opts)
	msgs := w.wait(t, "the hello", 20*time.Second, func(m stepdown.Message) bool { return m.Type == stepdown.TypeHello })
	if h := msgs[0]; h.State != stepdown.StateStepdown || h.Reason != stepdown.ReasonOffset {
		t.Fatalf("hello after a kill -9 during the stepdown: %s, want stepdown offset", h)
	}
	// The offset clears; kill again early in the hold-down.
	c.SetOffset(0)
	saved := waitSaved(t, filepath.Join(state, "stepdown.json"), func(s string) bool { return strings.Contains(s, "hold_until_boottime_ns") })
	time.Sleep(time.Second)
	msgs1 := w.wait(t, "nothing", 0, func(stepdown.Message) bool { return true })
	t.Logf("a client connected during restart 1 received:\n%s", lines(msgs1))
	kill(t, d)

	// Restart 2: during the hold-down; the resume comes at its end.
	w = watch(t, sock)
	daemontest.Start(t, bin, opts)
	msgs = w.wait(t, "the resume", 20*time.Second, func(m stepdown.Message) bool { return m.Type == stepdown.TypeResume })
	t.Logf("a client connected during restart 2 received:\n%s", lines(msgs))
	if h := msgs[0]; h.Type != stepdown.TypeHello || h.State != stepdown.StateStepdown {
		t.Errorf("hello after a kill -9 during the hold-down: %s, want stepdown", h)
	}
	w.mu.Lock()
	resumedAt := w.at[len(w.at)-1]
	w.mu.Unlock()
	holdUntil := holdUntilBoottime(t, saved)
	if now, left := boottime(t), time.Until(resumedAt); now-left < holdUntil {
		t.Errorf("resumed %s before the hold-down that began before the kill ended", holdUntil-(now-left))
	}
	for _, m := range msgs {
		if m.Type == stepdown.TypeResume && m.Reason == stepdown.ReasonStarting {
			t.Errorf("a restart in the hold-down announced %s", m)
		}
	}
}

func kill(t *testing.T, d *daemontest.Daemon) {
	t.Helper()
	if err := syscall.Kill(d.PID(), syscall.SIGKILL); err != nil {
		t.Fatal(err)
	}
	d.Stop() // waits for it: it exited on SIGKILL, not on the SIGTERM Stop may send
}

func waitSaved(t *testing.T, path string, cond func(string) bool) string {
	t.Helper()
	deadline := time.Now().Add(20 * time.Second)
	for {
		b, err := os.ReadFile(path)
		if err == nil && cond(string(b)) {
			return string(b)
		}
		if time.Now().After(deadline) {
			t.Fatalf("%s: %q, %v", path, b, err)
		}
		time.Sleep(10 * time.Millisecond)
	}
}

func holdUntilBoottime(t *testing.T, saved string) time.Duration {
	t.Helper()
	var ns int64
	i := strings.Index(saved, `"hold_until_boottime_ns":`)
	if i < 0 {
		t.Fatalf("no hold_until_boottime_ns in %s", saved)
	}
	if _, err := fmt.Sscanf(saved[i+len(`"hold_until_boottime_ns":`):], "%d", &ns); err != nil {
		t.Fatal(err)
	}
	return time.Duration(ns)
}

func boottime(t *testing.T) time.Duration {
	t.Helper()
	var ts unix.Timespec
	if err := unix.ClockGettime(unix.CLOCK_BOOTTIME, &ts); err != nil {
		t.Fatal(err)
	}
	return time.Duration(ts.Nano())
}
