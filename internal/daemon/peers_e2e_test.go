package daemon_test

import (
	"context"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/netip"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/clockwatch/clockwatch/internal/daemontest"
	"github.com/clockwatch/clockwatch/internal/metricsdoc"
	"github.com/clockwatch/clockwatch/internal/peers"
	"github.com/clockwatch/clockwatch/stepdown"
)

// movable is a peer's socket whose clock runs off by a shift the test
// moves: the kernel's receive timestamps are moved as the transmit ones.
type movable struct {
	peers.PacketConn
	shift *atomic.Int64
}

func (m movable) ReadFrom(b []byte) (int, netip.AddrPort, time.Time, error) {
	n, from, rx, err := m.PacketConn.ReadFrom(b)
	return n, from, rx.Add(time.Duration(m.shift.Load())), err
}

// fakeFleet runs n responders on loopback, their clocks off by *shift.
func fakeFleet(t *testing.T, n int, shift *atomic.Int64) []string {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	t.Cleanup(cancel)
	var addrs []string
	for range n {
		c, err := peers.ListenUDP("127.0.0.1:0")
		if err != nil {
			t.Fatal(err)
		}
		r := peers.NewResponder(movable{c, shift}, peers.ResponderOptions{Rate: 100, Burst: 100,
			Allowed: func(a netip.Addr) bool { return a.IsLoopback() },
			Now:     func() time.Time { return time.Now().Add(time.Duration(shift.Load())) },
			Local:   func() peers.State { return peers.State{State: stepdown.StateOK, Epoch: 1} }})
		go r.Run(ctx)
		addrs = append(addrs, c.LocalAddr().String())
	}
	return addrs
}

// TestPeerOffsetStepsDown runs the real binary with two peers whose clocks
// are 800 ms ahead of this host's: the majority says this clock is 800 ms
// behind, and it steps down with peer_offset after the grace; the peers set
// right, it resumes after the hold-down. The whole path: the exchange, the
// judge, the policy's graced trigger, the announcer and the socket.
func TestPeerOffsetStepsDown(t *testing.T) {
	t.Parallel()
	var shift atomic.Int64
	addrs := fakeFleet(t, 2, &shift)
	conf := filepath.Join(t.TempDir(), "clockwatch.yml")
	if err := os.WriteFile(conf, []byte(fmt.Sprintf(`chrony:
  enabled: false
ntpd:
  enabled: false
ptp:
  enabled: false
timesyncd:
  mode: "off"
stepdown:
  hold_down: 2s
  triggers:
    error_bound:
      threshold: 20s
    unsynchronized:
      enabled: false
    peer_offset:
      grace: 1s
peers:
  listen: "127.0.0.1:0"
  static: [%q, %q]
  interval: 1s
  exchanges: 2
  timeout: 200ms
  max_rtt: 50ms
`, addrs[0], addrs[1])), 0o644); err != nil {
		t.Fatal(err)
	}
	bin := daemontest.Build(t)
	d := daemontest.Start(t, bin, daemontest.Options{Args: []string{"--config.file=" + conf}})
	w := watchDaemon(t, d)
	w.state(stepdown.StateOK, 20*time.Second)

	shift.Store(int64(800 * time.Millisecond))
	moved := time.Now()
	m := w.state(stepdown.StateStepdown, 20*time.Second)
	took := time.Since(moved)
	if m.Reason != stepdown.ReasonPeerOffset || m.Source != "peers" || !strings.Contains(m.Detail, "2 of 2 peers more than 100ms off") {
		t.Errorf("stepdown %s, want reason peer_offset from peers", m)
	}
	t.Logf("peers moved 800 ms: %s %.1fs later (interval 1s, grace 1s)", m, took.Seconds())
	body := scrape(t, d)
	for _, want := range []string{"clockwatch_peer_outside 1", "clockwatch_peer_measured 2", "clockwatch_peer_disagreeing 2"} {
		if !strings.Contains(body, want+"\n") {
			t.Errorf("/metrics has no %q", want)
		}
	}
	if v := metricValue(t, body, "clockwatch_peer_fleet_offset_seconds"); v < 0.79 || v > 0.81 {
		t.Errorf("clockwatch_peer_fleet_offset_seconds %v, want 0.8", v)
	}
	// Every peers series is documented, with its type.
	doc, err := metricsdoc.Read("../../docs/metrics.md")
	if err != nil {
		t.Fatal(err)
	}
	n := 0
	for _, line := range strings.Split(body, "\n") {
		if f := strings.Fields(line); len(f) == 4 && f[1] == "TYPE" && strings.HasPrefix(f[2], "clockwatch_peer_") {
			n++
			if m, ok := doc[f[2]]; !ok || m.Type != f[3] {
				t.Errorf("%s (%s) is not in docs/metrics.md with its type (%+v)", f[2], f[3], m)
			}
		}
	}
	if n < 10 {
		t.Errorf("only %d clockwatch_peer_ families exported", n)
	}

	shift.Store(0)
	back := time.Now()
	m = w.state(stepdown.StateOK, 20*time.Second)
	if m.Type != stepdown.TypeResume || m.Reason != stepdown.ReasonPeerOffset {
		t.Errorf("resume %s, want a resume of peer_offset", m)
	}
	t.Logf("peers set back: %s %.1fs later (hold-down 2s)", m, time.Since(back).Seconds())
}

func scrape(t *testing.T, d *daemontest.Daemon) string {
	t.Helper()
	resp, err := http.Get("http://" + d.Addr + "/metrics")
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

// metricValue is the value of the series that starts the line with name.
func metricValue(t *testing.T, body, name string) float64 {
	t.Helper()
	for _, line := range strings.Split(body, "\n") {
		if v, ok := strings.CutPrefix(line, name+" "); ok {
			f, err := strconv.ParseFloat(v, 64)
			if err != nil {
				t.Fatal(err)
			}
			return f
		}
	}
	t.Fatalf("no %s in /metrics", name)
	return 0
}

// TestWatchPeerAcrossDaemons: two real clockwatch processes measuring each
// other; a Go subscriber on A's socket watches B; B is drilled on its own
// socket: the subscriber hears B's clock untrusted, then trusted again,
// through A, while A's own state stays ok.
func TestWatchPeerAcrossDaemons(t *testing.T) {
	t.Parallel()
	bin := daemontest.Build(t)
	portA, portB := freeUDPPort(t), freeUDPPort(t)
	conf := func(port, peer int) string {
		path := filepath.Join(t.TempDir(), "clockwatch.yml")
		if err := os.WriteFile(path, []byte(fmt.Sprintf(`chrony: {enabled: false}
stepdown:
  triggers:
    error_bound: {enabled: false}
    unsynchronized: {enabled: false}
peers: {listen: "127.0.0.1:%d", static: ["127.0.0.1:%d"], interval: 1s, exchanges: 1}
`, port, peer)), 0o644); err != nil {
			t.Fatal(err)
		}
		return path
	}
	a := daemontest.Start(t, bin, daemontest.Options{Args: []string{"--config.file=" + conf(portA, portB)}})
	b := daemontest.Start(t, bin, daemontest.Options{Args: []string{"--config.file=" + conf(portB, portA)}})
	watchDaemon(t, a).state(stepdown.StateOK, 20*time.Second)
	watchDaemon(t, b).state(stepdown.StateOK, 20*time.Second)
	peerB := fmt.Sprintf("127.0.0.1:%d", portB)
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	sub := stepdown.Subscribe(ctx, stepdown.Options{Path: a.StepdownSocket(), WatchPeers: []string{peerB}})
	wait := func(what string, ok func(stepdown.Message) bool) stepdown.Message {
		t.Helper()
		for {
			select {
			case ev := <-sub.Events():
				if ev.Type == stepdown.TypePeer && ok(ev.Message) {
					return ev.Message
				}
			case <-ctx.Done():
				t.Fatalf("%s: not heard; A's log:\n%s", what, a.Log())
			}
		}
	}
	wait("B trusted", func(m stepdown.Message) bool { return m.State == stepdown.StateOK && m.Peer == peerB })
	c, err := stepdown.Dial(ctx, b.StepdownSocket())
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	drilled := time.Now()
	if err := c.Send(stepdown.Message{Type: stepdown.TypeDrill, Reason: stepdown.ReasonStep, HoldSeconds: 3}); err != nil {
		t.Fatal(err)
	}
	m := wait("B's drill", func(m stepdown.Message) bool { return m.State == stepdown.StateStepdown })
	if m.Reason != stepdown.ReasonDrill {
		t.Errorf("B's stepdown as A tells it: %s", m)
	}
	t.Logf("B drilled: A's subscriber heard %s %v later", m, time.Since(drilled).Round(time.Millisecond))
	wait("B trusted again", func(m stepdown.Message) bool { return m.State == stepdown.StateOK })
	if st, _ := sub.State(); st != stepdown.StateOK {
		t.Errorf("A's own state %s", st)
	}
}

func freeUDPPort(t *testing.T) int {
	t.Helper()
	c, err := net.ListenPacket("udp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	return c.LocalAddr().(*net.UDPAddr).Port
}
