package segment_test

import (
	"context"
	"os"
	"path/filepath"
	"syscall"
	"testing"
	"time"

	"github.com/clockwatch/clockwatch/internal/chronydtest"
	"github.com/clockwatch/clockwatch/internal/daemontest"
	"github.com/clockwatch/clockwatch/internal/testtool"
	"github.com/clockwatch/clockwatch/stepdown"
	"github.com/clockwatch/clockwatch/stepdown/boundedtime"
)

// TestDaemonSegment runs the clockwatch binary against a real chronyd and
// reads its segment from this process: the bound grows between chrony
// updates, a drill makes it "disrupted" within one write of the socket's
// stepdown, and killing clockwatch leaves a segment that ages into "free
// running".
func TestDaemonSegment(t *testing.T) {
	testtool.Short(t)
	t.Parallel()
	c := chronydtest.Start(t, chronydtest.Options{})
	bin := daemontest.Build(t)
	const interval = 100 * time.Millisecond
	conf := filepath.Join(t.TempDir(), "clockwatch.yml")
	if err := os.WriteFile(conf, []byte(`chrony:
  address: `+c.Socket+`
  conf_path: `+c.Conf+`
  poll_interval: 3s
clockbound:
  max_drift_ppb: 1000000
  interval: 100ms
stepdown:
  hold_down: 500ms
  # chronyd -x leaves this host's kernel clock unsynchronised (maxerror 16 s):
  # judge by chrony alone.
  triggers:
    error_bound:
      enabled: false
    unsynchronized:
      enabled: false
`), 0o644); err != nil {
		t.Fatal(err)
	}
	d := daemontest.Start(t, bin, daemontest.Options{Args: []string{"--config.file=" + conf}})
	path := filepath.Join(d.RuntimeDir, "clockbound", "shm0")
	if fi, err := os.Stat(path); err != nil || fi.Mode() != 0o644 {
		t.Fatalf("segment %s: %v %v, want mode 0644", path, fi, err)
	}

	var r *boundedtime.Reader
	waitStatus := func(what string, want boundedtime.Status, within time.Duration) time.Duration {
		t.Helper()
		start := time.Now()
		for {
			var err error
			if r == nil {
				r, err = boundedtime.Open(path)
			}
			if r != nil {
				var st boundedtime.Status
				if _, _, st, err = r.Now(); err == nil && st == want {
					return time.Since(start)
				}
			}
			if time.Since(start) > within {
				t.Fatalf("%s: no %v within %v (last error %v); clockwatch log:\n%s", what, want, within, err, d.Log())
			}
			time.Sleep(time.Millisecond)
		}
	}
	waitStatus("chronyd synchronising", boundedtime.StatusSynchronized, 60*time.Second)
	defer r.Close()

	// Between two chrony polls (3 s apart) every write carries the bound
	// grown by 1000 ppm over the time since the last poll.
	var prev boundedtime.Snapshot
	grew := 0
	for deadline := time.Now().Add(10 * time.Second); grew < 5 && time.Now().Before(deadline); time.Sleep(interval / 4) {
		s, err := r.Snapshot()
		if err != nil {
			t.Fatal(err)
		}
		if s.Generation == prev.Generation {
			continue
		}
		if prev.Generation != 0 && s.Status == boundedtime.StatusSynchronized && s.AsOf > prev.AsOf {
			growth, want := s.Bound-prev.Bound, (s.AsOf-prev.AsOf)/1000
			// CLOCK_MONOTONIC_COARSE ticks (4 ms at HZ=250) blur as_of.
			if growth > 0 && growth-want < 10*time.Microsecond && want-growth < 10*time.Microsecond {
				grew++
			} else {
				t.Logf("bound %v -> %v over %v: a chrony update in between", prev.Bound, s.Bound, s.AsOf-prev.AsOf)
			}
		}
		prev = s
	}
	if grew < 5 {
		t.Errorf("the bound grew by max drift x elapsed over %d consecutive writes, want 5", grew)
	}

	// A drill: the socket's stepdown, and the segment within one write.
	conn, err := stepdown.Dial(context.Background(), d.StepdownSocket())
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	conn.SetReadDeadline(time.Now().Add(30 * time.Second))
	if hello, err := conn.Read(); err != nil || hello.State != stepdown.StateOK {
		t.Fatalf("hello %v, %v; want state ok", hello, err)
	}
	if err := conn.Send(stepdown.Message{Type: stepdown.TypeDrill, HoldSeconds: 1}); err != nil {
		t.Fatal(err)
	}
	for {
		m, err := conn.Read()
		if err != nil {
			t.Fatal(err)
		}
		if m.Type == stepdown.TypeStepdown {
			break
		}
	}
	lag := waitStatus("the drill", boundedtime.StatusDisrupted, interval)
	t.Logf("segment disrupted %v after the socket's stepdown", lag)
	waitStatus("the drill's resume", boundedtime.StatusSynchronized, 30*time.Second)

	// Killed: no more writes; after 5 s readers downgrade to free running.
	killed := time.Now()
	if err := syscall.Kill(d.PID(), syscall.SIGKILL); err != nil {
		t.Fatal(err)
	}
	waitStatus("clockwatch killed", boundedtime.StatusFreeRunning, boundedtime.RestartGrace+2*time.Second)
	if since := time.Since(killed); since < boundedtime.RestartGrace-interval {
		t.Errorf("free running %v after the kill, want about %v", since, boundedtime.RestartGrace)
	}
	e, l, _, err := r.Now()
	if err != nil || l.Sub(e) < 2*5*time.Millisecond { // 5 s at 1000 ppm, each side
		t.Errorf("stale segment: width %v (%v), want more than 10 ms: grown by the drift since the last write", l.Sub(e), err)
	}
}
