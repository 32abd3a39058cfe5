package socket_test

import (
	"context"
	"net"
	"os"
	"testing"
	"time"

	"github.com/clockwatch/clockwatch/internal/policy"
	"github.com/clockwatch/clockwatch/internal/transport/socket"
	"github.com/clockwatch/clockwatch/stepdown"
)

// faults reports whether the slow fault suite runs (make test-faults).
func faults() bool { return os.Getenv("CLOCKWATCH_FAULTS") != "" }

func openFDs(t *testing.T) int { return len(fdList(t)) }

// fdList is what each of the process's file descriptors is.
func fdList(t *testing.T) map[string]string {
	t.Helper()
	fds, err := os.ReadDir("/proc/self/fd")
	if err != nil {
		t.Fatal(err)
	}
	out := map[string]string{}
	for _, fd := range fds {
		target, _ := os.Readlink("/proc/self/fd/" + fd.Name())
		out[fd.Name()] = target
	}
	return out
}

// Connect cycles, polite and abrupt, leave no file descriptor or client
// behind (the 20,000 cycles in the slow suite).
//
// Not parallel: it counts the process's file descriptors.
func TestAbuseConnectCyclesLeakNothing(t *testing.T) {
	cycles := 1000
	if faults() {
		cycles = 20000
	}
	cfg := testConfig(t)
	cfg.Heartbeat = time.Second
	s, _ := start(t, cfg, socket.Options{})
	// One cycle first, so that what the server opens once (its pulse's
	// timerfd, its input poller) is open before the count.
	c, _ := dial(t, cfg.Socket)
	c.Close()
	waitFor(t, "the first client gone", func() bool { return metricValue(t, s, socket.MetricSubscribers) == 0 })
	beforeList := fdList(t)
	before := len(beforeList)
	for i := range cycles {
		raw, err := net.Dial("unix", cfg.Socket)
		if err != nil {
			t.Fatalf("cycle %d: %v", i, err)
		}
		if i%2 == 0 { // half read their hello, half hang up at once
			raw.SetReadDeadline(time.Now().Add(5 * time.Second))
			if _, err := stepdown.NewConn(raw).Read(); err != nil {
				t.Fatalf("cycle %d: reading hello: %v", i, err)
			}
		}
		raw.Close()
	}
	waitFor(t, "every client gone", func() bool { return metricValue(t, s, socket.MetricSubscribers) == 0 })
	// Bounded by a minute, not 10 s: after 20,000 cycles on a loaded
	// machine (the fault suite beside the qemu lanes) the closes ran out
	// of 10 s once; a leak never comes back.
	for deadline := time.Now().Add(time.Minute); openFDs(t) > before+2; time.Sleep(10 * time.Millisecond) {
		if time.Now().After(deadline) {
			var extra []string
			for fd, target := range fdList(t) {
				if beforeList[fd] != target {
					extra = append(extra, fd+" → "+target)
				}
			}
			t.Fatalf("%d file descriptors a minute after the cycles, %d before; new or changed: %v", openFDs(t), before, extra)
		}
	}
	t.Logf("%d connect cycles: %d fds before, %d after", cycles, before, openFDs(t))
}

// Many subscribers at once all get their hello and every event (the issue's
// 5,000 in the slow suite).
func TestAbuseManySubscribers(t *testing.T) {
	t.Parallel()
	n := 300
	if faults() {
		n = 5000
	}
	cfg := testConfig(t)
	cfg.Heartbeat = time.Second
	cfg.MaxClients = n + 100
	_, ann := start(t, cfg, socket.Options{})
	conns := make([]*stepdown.Conn, n)
	for i := range conns {
		c, err := stepdown.Dial(context.Background(), cfg.Socket)
		if err != nil {
			t.Fatalf("subscriber %d: %v", i, err)
		}
		defer c.Close()
		conns[i] = c
	}
	// Dial returns before the server admits: wait for every hello, so the
	// step reaches each as an event.
	for i, c := range conns {
		c.SetReadDeadline(time.Now().Add(10 * time.Second))
		if m, err := c.Read(); err != nil || m.Type != stepdown.TypeHello {
			t.Fatalf("subscriber %d: %v %v, want a hello", i, m, err)
		}
	}
	began := time.Now()
	ann.Step(policy.Step{Seconds: -1, Mono: 123, Epoch: 1, How: policy.SeenSampling})
	deadline := time.Now().Add(time.Minute)
	for i, c := range conns {
		for time.Now().Before(deadline) {
			c.SetReadDeadline(time.Now().Add(10 * time.Second))
			m, err := c.Read()
			if err != nil {
				t.Fatalf("subscriber %d: %v", i, err)
			}
			if m.Type == stepdown.TypeStepdown {
				break
			}
		}
	}
	if time.Now().After(deadline) {
		t.Fatalf("the step did not reach all %d subscribers within a minute", n)
	}
	t.Logf("%d subscribers: the step reached every one in %s", n, time.Since(began).Round(time.Millisecond))
}
