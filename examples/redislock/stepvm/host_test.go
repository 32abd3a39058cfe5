package stepvm

import (
	"context"
	"fmt"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/clockwatch/clockwatch/stepdown"
)

// gates is the test's control channel to its guest: the guest script waits
// for http://10.0.2.2:PORT/go/NAME (the host's loopback through user-mode
// networking), which answers 200 once the test opens NAME.
type gates struct {
	mu   sync.Mutex
	open map[string]bool
	port int
}

func startGates(t *testing.T) *gates {
	t.Helper()
	g := &gates{open: map[string]bool{}}
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	srv := &http.Server{Handler: g, ReadHeaderTimeout: 5 * time.Second}
	go srv.Serve(l)
	t.Cleanup(func() { srv.Close() })
	g.port = l.Addr().(*net.TCPAddr).Port
	return g
}

func (g *gates) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	g.mu.Lock()
	defer g.mu.Unlock()
	if !g.open[strings.TrimPrefix(r.URL.Path, "/go/")] {
		http.NotFound(w, r)
	}
}

func (g *gates) Open(name string) {
	g.mu.Lock()
	defer g.mu.Unlock()
	g.open[name] = true
}

// freePort returns a loopback port of network ("tcp" or "udp") nobody uses
// right now.
func freePort(t *testing.T, network string) int {
	t.Helper()
	if network == "udp" {
		c, err := net.ListenPacket("udp", "127.0.0.1:0")
		if err != nil {
			t.Fatal(err)
		}
		defer c.Close()
		return c.LocalAddr().(*net.UDPAddr).Port
	}
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	return l.Addr().(*net.TCPAddr).Port
}

// peersConfig is the `peers:` section both clockwatch agents use: one peer
// (the other), measured every second. The guest answers through qemu's
// user-mode network: round trips of a few ms, far more when the machine is
// loaded, so max_rtt is the timeout (offsets do not matter here, the state
// field does) and the timeout as long as a 1 s round allows.
const peersConfig = `peers:
  listen: %q
  static: [%q]
  interval: 1s
  exchanges: 2
  timeout: 450ms
  max_rtt: 450ms
  rate_limit: 20
`

// quietSources turns off the time daemons' probes: neither machine runs one
// that matters here, and the host's must not be judged.
const quietSources = `chrony: {enabled: false}
ntpd: {enabled: false}
ptp: {enabled: false}
timesyncd: {mode: "off"}
vmclock: {mode: "off"}
`

// hostClockwatch is "another node": a clockwatch on the host, with its
// socket and state under dir (never the machine's /run/clockwatch or
// /var/lib/clockwatch), measuring the guest as its one peer (the guest's
// 9847/udp forwarded from guestPeer on loopback). It only reads the host's
// clock; every trigger but the step is off (one peer decides nothing).
func hostClockwatch(t *testing.T, bin, dir string, listenPort, guestPeer int) (socket string) {
	t.Helper()
	socket = filepath.Join(dir, "stepdown.sock")
	conf := "journal:\n  dir: " + filepath.Join(dir, "state") + "\n" + quietSources +
		"stepdown:\n  enabled: true\n  socket: " + socket + "\n  hold_down: 1s\n  triggers:\n" +
		"    offset: {enabled: false}\n    unsynchronized: {enabled: false}\n    error_bound: {enabled: false}\n    peer_offset: {enabled: false}\n" +
		fmt.Sprintf(peersConfig, fmt.Sprintf("127.0.0.1:%d", listenPort), fmt.Sprintf("127.0.0.1:%d", guestPeer))
	cfg := filepath.Join(dir, "clockwatch.yml")
	if err := os.WriteFile(cfg, []byte(conf), 0o600); err != nil {
		t.Fatal(err)
	}
	if out, err := exec.Command(bin, "--config.file="+cfg, "--config.check").CombinedOutput(); err != nil {
		t.Fatalf("the host clockwatch's configuration: %v\n%s\n%s", err, out, conf)
	}
	logPath := filepath.Join(dir, "clockwatch.log")
	logf, err := os.Create(logPath)
	if err != nil {
		t.Fatal(err)
	}
	defer logf.Close()
	cmd := exec.Command(bin, "--config.file="+cfg, "--web.listen-address=127.0.0.1:0")
	cmd.Env = append(os.Environ(), "RUNTIME_DIRECTORY="+dir, "STATE_DIRECTORY="+filepath.Join(dir, "state"))
	cmd.Stdout, cmd.Stderr = logf, logf
	cmd.SysProcAttr = &syscall.SysProcAttr{Pdeathsig: syscall.SIGKILL}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	done := make(chan struct{})
	go func() { cmd.Wait(); close(done) }()
	t.Cleanup(func() {
		cmd.Process.Signal(syscall.SIGTERM) // this process only, by its PID
		select {
		case <-done:
		case <-time.After(5 * time.Second):
			cmd.Process.Kill()
			<-done
		}
		if t.Failed() {
			b, _ := os.ReadFile(logPath)
			t.Logf("host clockwatch's log:\n%s", b)
		}
	})
	ctx, cancel := context.WithTimeout(t.Context(), 30*time.Second)
	defer cancel()
	for {
		c, err := stepdown.Dial(ctx, socket)
		if err == nil {
			c.Close()
			return socket
		}
		select {
		case <-done:
			b, _ := os.ReadFile(logPath)
			t.Fatalf("the host clockwatch exited:\n%s", b)
		case <-ctx.Done():
			t.Fatalf("the host clockwatch's socket %s: %v", socket, err)
		case <-time.After(50 * time.Millisecond):
		}
	}
}
