package daemon_test

import (
	"bytes"
	"context"
	"errors"
	"io"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/clockwatch/clockwatch/internal/chronydtest"
	"github.com/clockwatch/clockwatch/internal/daemontest"
	"github.com/clockwatch/clockwatch/internal/ntptest"
	"github.com/clockwatch/clockwatch/stepdown"
	"github.com/clockwatch/clockwatch/stepdown/boundedtime"
)

// badInputConfig is a clockwatch configuration that reads only the fake
// sources given (chrony: socket path; ntpd: host:port; empty: off). The
// kernel's maxerror on a test host is 16 s (nothing disciplines it), so the
// error bound threshold is 20 s: a saturated bound is over it, the kernel's
// is not.
func badInputConfig(t *testing.T, chronySocket, ntpdAddr string) string {
	t.Helper()
	src := "chrony:\n  enabled: false\n"
	if chronySocket != "" {
		// A short directory: a unix socket's path has at most 107 bytes,
		// and t.TempDir() holds the test's name.
		reply, err := os.MkdirTemp("", "cwreply")
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { os.RemoveAll(reply) })
		src = "chrony:\n  address: " + chronySocket + "\n  reply_socket_dir: " + reply + "\n  poll_interval: 1s\n  max_poll_interval: 1s\n  timeout: 500ms\n"
	}
	if ntpdAddr != "" {
		src += "ntpd:\n  address: " + ntpdAddr + "\n  poll_interval: 1s\n  timeout: 200ms\n"
	} else {
		src += "ntpd:\n  enabled: false\n"
	}
	conf := filepath.Join(t.TempDir(), "clockwatch.yml")
	if err := os.WriteFile(conf, []byte(src+`ptp:
  enabled: false
timesyncd:
  mode: "off"
clockbound:
  interval: 100ms
stepdown:
  hold_down: 1s
  triggers:
    error_bound:
      threshold: 20s
    probe_lost:
      grace: 1s
`), 0o644); err != nil {
		t.Fatal(err)
	}
	return conf
}

// sdWatch follows the daemon's stepdown socket and its segment.
type sdWatch struct {
	t   *testing.T
	d   *daemontest.Daemon
	c   *stepdown.Conn
	msg chan stepdown.Message
}

func watchDaemon(t *testing.T, d *daemontest.Daemon) *sdWatch {
	t.Helper()
	var c *stepdown.Conn
	for start := time.Now(); ; time.Sleep(10 * time.Millisecond) {
		var err error
		if c, err = stepdown.Dial(context.Background(), d.StepdownSocket()); err == nil {
			break
		}
		if time.Since(start) > 10*time.Second {
			t.Fatalf("stepdown socket: %v; log:\n%s", err, d.Log())
		}
	}
	t.Cleanup(func() { c.Close() })
	w := &sdWatch{t: t, d: d, c: c, msg: make(chan stepdown.Message, 64)}
	go func() {
		defer close(w.msg)
		for {
			m, err := c.Read()
			if err != nil {
				return
			}
			if m.Type != stepdown.TypeHeartbeat {
				w.msg <- m
			}
		}
	}()
	return w
}

// state waits until the socket announces state (a hello or an event) and
// returns the message.
func (w *sdWatch) state(want stepdown.State, within time.Duration) stepdown.Message {
	w.t.Helper()
	deadline := time.After(within)
	for {
		select {
		case m, ok := <-w.msg:
			if !ok {
				w.t.Fatalf("socket closed waiting for %s; log:\n%s", want, w.d.Log())
			}
			if m.State == want {
				return m
			}
		case <-deadline:
			w.t.Fatalf("no %s on the socket within %v; log:\n%s", want, within, w.d.Log())
		}
	}
}

// segment reads the daemon's clockbound segment's status.
func segment(t *testing.T, d *daemontest.Daemon) (boundedtime.Status, error) {
	t.Helper()
	r, err := boundedtime.Open(filepath.Join(d.RuntimeDir, "clockbound", "shm0"))
	if err != nil {
		return boundedtime.StatusUnknown, err
	}
	defer r.Close()
	_, _, st, err := r.Now()
	return st, err
}

// segmentStays checks the segment for a while: never synchronized.
func segmentNever(t *testing.T, d *daemontest.Daemon, bad boundedtime.Status, for_ time.Duration) {
	t.Helper()
	for end := time.Now().Add(for_); time.Now().Before(end); time.Sleep(50 * time.Millisecond) {
		if st, err := segment(t, d); err == nil && st == bad {
			t.Fatalf("the segment says %s; log:\n%s", st, d.Log())
		}
	}
}

func segmentIs(t *testing.T, d *daemontest.Daemon, want boundedtime.Status, within time.Duration) {
	t.Helper()
	var st boundedtime.Status
	var err error
	for start := time.Now(); time.Since(start) < within; time.Sleep(20 * time.Millisecond) {
		if st, err = segment(t, d); err == nil && st == want {
			return
		}
	}
	t.Fatalf("segment %s (%v), want %s within %v; log:\n%s", st, err, want, within, d.Log())
}

// TestDaemonNonsenseFromChronyd runs the daemon against a fake chronyd
// replaying captured replies with the root dispersion changed (issue 24,
// item 2): 1e10 s, chrony's largest float (4.6e18 s) and -1000 s each got
// "ok" on the socket; now the socket steps down and the segment never says
// synchronized. The captured replies as they are give ok and synchronized.
func TestDaemonNonsenseFromChronyd(t *testing.T) {
	t.Parallel()
	bin := daemontest.Build(t)
	replies, err := chronydtest.LoadReplies("../probe/chrony/testdata/unix-synced")
	if err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		name   string
		disp   float64
		reason stepdown.Reason
		// orKernel is the kernel's reason also accepted (its figures count
		// once no daemon answers).
		orKernel stepdown.Reason
		log      string
	}{
		{name: "captured"},
		{name: "root dispersion 1e10 s", disp: 1e10, reason: stepdown.ReasonErrorBound},
		{name: "root dispersion 4.6e18 s", disp: chronydtest.MaxFloat, reason: stepdown.ReasonErrorBound},
		// chronyd answers, with figures that mean nothing: lost at once
		// at the start (after probe_lost's grace once started). With no
		// daemon answering, the kernel's own figures count too: on a test
		// host nothing disciplines it, so its "unsynchronized" may come
		// first, which is just as much a stepdown.
		{name: "root dispersion -1000 s", disp: -1000, reason: stepdown.ReasonProbeLost, orKernel: stepdown.ReasonUnsynchronized, log: "root dispersion is -1000 s, below zero"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			f := chronydtest.StartFake(t, replies)
			// The capture is of a chronyd 2 s off its server: 100 µs here.
			f.Edit("tracking", func(b []byte) { chronydtest.Float(b, chronydtest.TrackingCurrentCorrection, -1e-4) })
			if tc.disp != 0 {
				f.Edit("tracking", func(b []byte) { chronydtest.Float(b, chronydtest.TrackingRootDispersion, tc.disp) })
			}
			d := daemontest.Start(t, bin, daemontest.Options{Args: []string{"--config.file=" + badInputConfig(t, f.Socket, "")}})
			w := watchDaemon(t, d)
			if tc.reason == "" {
				w.state(stepdown.StateOK, 20*time.Second)
				segmentIs(t, d, boundedtime.StatusSynchronized, 10*time.Second)
				return
			}
			if m := w.state(stepdown.StateStepdown, 20*time.Second); m.Reason != tc.reason && (tc.orKernel == "" || m.Reason != tc.orKernel || m.Source != "kernel") {
				t.Errorf("stepdown %+v, want reason %s; log:\n%s", m, tc.reason, d.Log())
			}
			segmentNever(t, d, boundedtime.StatusSynchronized, time.Second)
			if !strings.Contains(d.Log(), tc.log) {
				t.Errorf("the log does not say %q:\n%s", tc.log, d.Log())
			}
		})
	}
}

// TestDaemonSilentChronyd runs the daemon against a chronyd socket that
// takes every request and never answers (a hung chronyd): it counted as
// absent, not there at all, and the start said ok on the kernel's word.
// Looked for and there, it is a probe failure: stepdown from the start,
// never ok, and the segment never synchronized.
func TestDaemonSilentChronyd(t *testing.T) {
	t.Parallel()
	bin := daemontest.Build(t)
	f := chronydtest.StartFake(t, map[string][]byte{}) // no reply to anything
	// Nothing disciplines a test host's kernel: its STA_UNSYNC would step
	// down whatever chronyd did. Off, chronyd's silence alone decides.
	conf := badInputConfig(t, f.Socket, "")
	b, err := os.ReadFile(conf)
	if err != nil {
		t.Fatal(err)
	}
	b = bytes.Replace(b, []byte("  triggers:\n"), []byte("  triggers:\n    unsynchronized: {enabled: false}\n"), 1)
	if err := os.WriteFile(conf, b, 0o644); err != nil {
		t.Fatal(err)
	}
	d := daemontest.Start(t, bin, daemontest.Options{Args: []string{"--config.file=" + conf}})
	w := watchDaemon(t, d)
	deadline := time.After(20 * time.Second)
	for stepped := false; !stepped; {
		select {
		case m, ok := <-w.msg:
			if !ok {
				t.Fatalf("socket closed; log:\n%s", d.Log())
			}
			switch m.State {
			case stepdown.StateOK:
				t.Fatalf("told ok with chronyd not answering: %s; log:\n%s", m, d.Log())
			case stepdown.StateStepdown:
				if m.Reason != stepdown.ReasonProbeLost || m.Source != "chrony" {
					t.Errorf("stepdown %s, want probe_lost from chrony", m)
				}
				stepped = true
			}
		case <-deadline:
			t.Fatalf("no stepdown within 20s; log:\n%s", d.Log())
		}
	}
	segmentNever(t, d, boundedtime.StatusSynchronized, 2*time.Second)
	select {
	case m := <-w.msg:
		if m.State == stepdown.StateOK {
			t.Errorf("told ok with chronyd not answering: %s", m)
		}
	default:
	}
	if f.Requests() == 0 {
		t.Error("the fake chronyd got no request")
	}
	if !strings.Contains(d.Log(), "cannot read chronyd") {
		t.Errorf("the log does not say it cannot read chronyd:\n%s", d.Log())
	}
}

// TestDaemonNonsenseFromNtpd: a fake ntpd whose system variables say
// rootdisp=inf and offset=nan, or lack rootdisp, got "ok" and a segment
// "synchronized" with a 6 µs bound (issue 24, item 1).
func TestDaemonNonsenseFromNtpd(t *testing.T) {
	t.Parallel()
	bin := daemontest.Build(t)
	for _, tc := range []struct{ name, sys string }{
		{"good", ntptest.SyncedSystem},
		{"rootdisp=inf offset=nan", strings.NewReplacer("rootdisp=2.250", "rootdisp=inf", "offset=0.125", "offset=nan").Replace(ntptest.SyncedSystem)},
		{"no rootdisp", strings.Replace(ntptest.SyncedSystem, "rootdisp=2.250, ", "", 1)},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			f, err := ntptest.StartMode6("127.0.0.1:0", ntptest.NewNtpd(3, tc.sys).Handle)
			if err != nil {
				t.Fatal(err)
			}
			t.Cleanup(func() { f.Close() })
			d := daemontest.Start(t, bin, daemontest.Options{Args: []string{"--config.file=" + badInputConfig(t, "", f.Addr())}})
			w := watchDaemon(t, d)
			if tc.sys == ntptest.SyncedSystem {
				w.state(stepdown.StateOK, 20*time.Second)
				segmentIs(t, d, boundedtime.StatusSynchronized, 10*time.Second)
				return
			}
			// ntpd lost at the start (probe_lost); the kernel's own status,
			// judged while no daemon answers, may be announced first.
			if m := w.state(stepdown.StateStepdown, 20*time.Second); m.Source != "ntpd" && m.Source != "kernel" {
				t.Errorf("stepdown %+v, want one for ntpd (or the kernel)", m)
			}
			segmentNever(t, d, boundedtime.StatusSynchronized, time.Second)
			if !strings.Contains(d.Log(), "invalid figure") {
				t.Errorf("the log does not say why ntpd's reading is refused:\n%s", d.Log())
			}
		})
	}
}

// TestDaemonSlowNtpd: ntpd, synchronised and read ok, turns slow (each of
// its 300 associations answers 100 ms late, under the 200 ms timeout: a 30
// s poll, 6.6 s for the 66 associations of the last fragment that the old
// reassembly saw) and its offset goes to 5 s at the same moment. Before, the old ok
// stood until the slow poll ended; now the poll ends at its deadline (the
// 1 s poll interval) and the source is lost after probe_lost's grace. The
// delay is logged for docs/step-detection.md.
func TestDaemonSlowNtpd(t *testing.T) {
	t.Parallel()
	bin := daemontest.Build(t)
	fake := ntptest.NewNtpd(300, ntptest.SyncedSystem)
	f, err := ntptest.StartMode6("127.0.0.1:0", fake.Handle)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { f.Close() })
	d := daemontest.Start(t, bin, daemontest.Options{Args: []string{"--config.file=" + badInputConfig(t, "", f.Addr())}})
	w := watchDaemon(t, d)
	w.state(stepdown.StateOK, 20*time.Second)
	start := time.Now()
	f.SetDelay(100 * time.Millisecond)
	fake.Set(strings.Replace(ntptest.SyncedSystem, "offset=0.125", "offset=5000", 1))
	m := w.state(stepdown.StateStepdown, 30*time.Second)
	delay := time.Since(start)
	t.Logf("stepdown (%s from %s) %v after ntpd turned slow and 5 s off", m.Reason, m.Source, delay.Round(time.Millisecond))
	if delay > 5*time.Second {
		t.Errorf("stepdown %v after ntpd turned slow, want within 5 s (poll deadline 1 s + probe_lost grace 1 s)", delay)
	}
}

// TestDaemonHostileStateFiles: a FIFO where a state file should be hung
// the start before any log line, SIGTERM ignored; symbolic links were
// followed (issue 24, item 6). Each case starts, names the file in its log,
// runs on (without persistence where that is what the docs promise) and
// stops on SIGTERM.
func TestDaemonHostileStateFiles(t *testing.T) {
	t.Parallel()
	bin := daemontest.Build(t)
	fifo := func(p string) error { return mkfifo(p) }
	for _, tc := range []struct {
		name    string
		prepare func(state, runtime string) error
		// check runs after the daemon has started and logged.
		check func(t *testing.T, state, runtime string)
		want  string
		// persist is clockwatch_journal_persistence_ok's value.
		persist string
		// exits: the daemon refuses to start (the socket and the segment
		// are not optional once enabled: as for an unwritable path).
		exits bool
	}{
		{name: "state.json is a FIFO", prepare: func(s, _ string) error { return fifo(filepath.Join(s, "state.json")) },
			// Refused and written anew (renamed over the FIFO): the epoch
			// is also in events.jsonl.
			want: "state.json is a FIFO, not a regular file", persist: "1"},
		{name: "events.jsonl is a FIFO", prepare: func(s, _ string) error { return fifo(filepath.Join(s, "events.jsonl")) },
			want: "events.jsonl is a FIFO, not a regular file", persist: "0"},
		{name: "stepdown.json is a FIFO", prepare: func(s, _ string) error { return fifo(filepath.Join(s, "stepdown.json")) },
			want: "stepdown.json is a FIFO, not a regular file", persist: "1"},
		{name: "events.jsonl links to another file", prepare: func(s, _ string) error {
			victim := filepath.Join(filepath.Dir(s), "victim")
			if err := os.WriteFile(victim, []byte("precious, no newline at the end"), 0o644); err != nil {
				return err
			}
			return os.Symlink(victim, filepath.Join(s, "events.jsonl"))
		}, check: func(t *testing.T, s, _ string) {
			if b, err := os.ReadFile(filepath.Join(filepath.Dir(s), "victim")); err != nil || string(b) != "precious, no newline at the end" {
				t.Errorf("the link's target now holds %q (%v)", b, err)
			}
		}, want: "events.jsonl is a symbolic link: refusing to follow it", persist: "0"},
		{name: "stepdown.sock.lock is a dangling link", prepare: func(_, r string) error {
			return os.Symlink(filepath.Join(filepath.Dir(r), "created-by-lock"), filepath.Join(r, "stepdown.sock.lock"))
		}, check: func(t *testing.T, _, r string) {
			if _, err := os.Lstat(filepath.Join(filepath.Dir(r), "created-by-lock")); !errors.Is(err, os.ErrNotExist) {
				t.Errorf("the lock link's target was created (%v)", err)
			}
		}, want: "stepdown.sock.lock is a symbolic link: refusing to follow it", exits: true},
		{name: "shm0.lock is a dangling link", prepare: func(_, r string) error {
			if err := os.Mkdir(filepath.Join(r, "clockbound"), 0o755); err != nil {
				return err
			}
			return os.Symlink(filepath.Join(filepath.Dir(r), "created-by-shm-lock"), filepath.Join(r, "clockbound", "shm0.lock"))
		}, check: func(t *testing.T, _, r string) {
			if _, err := os.Lstat(filepath.Join(filepath.Dir(r), "created-by-shm-lock")); !errors.Is(err, os.ErrNotExist) {
				t.Errorf("the lock link's target was created (%v)", err)
			}
		}, want: "shm0.lock is a symbolic link: refusing to follow it", exits: true},
		{name: "the clockbound directory is a link", prepare: func(_, r string) error {
			elsewhere := filepath.Join(filepath.Dir(r), "elsewhere")
			if err := os.Mkdir(elsewhere, 0o755); err != nil {
				return err
			}
			return os.Symlink(elsewhere, filepath.Join(r, "clockbound"))
		}, check: func(t *testing.T, _, r string) {
			if _, err := os.Lstat(filepath.Join(filepath.Dir(r), "elsewhere", "shm0")); !errors.Is(err, os.ErrNotExist) {
				t.Errorf("the segment was put where the link points (%v)", err)
			}
		}, want: "clockbound is a symbolic link: refusing to follow it", exits: true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			base := t.TempDir()
			state, runtime := filepath.Join(base, "state"), filepath.Join(base, "run")
			for _, dir := range []string{state, runtime} {
				if err := os.Mkdir(dir, 0o750); err != nil {
					t.Fatal(err)
				}
			}
			if err := tc.prepare(state, runtime); err != nil {
				t.Fatal(err)
			}
			conf := badInputConfig(t, "", "")
			if tc.exits {
				out, err := runToExit(t, bin, state, runtime, "--config.file="+conf)
				if err == nil || !strings.Contains(out, tc.want) {
					t.Errorf("exit %v, log:\n%s\nwant a failure saying %q", err, out, tc.want)
				}
				tc.check(t, state, runtime)
				return
			}
			d := daemontest.Start(t, bin, daemontest.Options{StateDir: state, RuntimeDir: runtime,
				Args: []string{"--config.file=" + conf}})
			for start := time.Now(); !strings.Contains(d.Log(), tc.want); time.Sleep(20 * time.Millisecond) {
				if time.Since(start) > 10*time.Second {
					t.Fatalf("the log does not say %q:\n%s", tc.want, d.Log())
				}
			}
			if tc.check != nil {
				tc.check(t, state, runtime)
			}
			if got, want := persistence(t, d), "clockwatch_journal_persistence_ok "+tc.persist; got != want {
				t.Errorf("%s, want %s", got, want)
			}
			begin := time.Now()
			if err := d.Stop(); err != nil {
				t.Fatalf("%v; log:\n%s", err, d.Log())
			}
			if took := time.Since(begin); took > 5*time.Second {
				t.Errorf("SIGTERM took %v", took)
			}
		})
	}
}

// runToExit runs the daemon until it exits (within 10 s) and returns its log.
func runToExit(t *testing.T, bin, state, runtime string, args ...string) (string, error) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	cmd := exec.CommandContext(ctx, bin, append([]string{"--web.listen-address=127.0.0.1:0"}, args...)...)
	cmd.Env = append(os.Environ(), "STATE_DIRECTORY="+state, "RUNTIME_DIRECTORY="+runtime)
	out, err := cmd.CombinedOutput()
	if ctx.Err() != nil {
		t.Fatalf("clockwatch did not exit within 10 s; log:\n%s", out)
	}
	return string(out), err
}

// persistence is the daemon's clockwatch_journal_persistence_ok line.
func persistence(t *testing.T, d *daemontest.Daemon) string {
	t.Helper()
	resp, err := http.Get("http://" + d.Addr + "/metrics")
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	for _, l := range strings.Split(string(b), "\n") {
		if strings.HasPrefix(l, "clockwatch_journal_persistence_ok ") {
			return l
		}
	}
	return "(none)"
}
