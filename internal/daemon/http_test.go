package daemon

import (
	"context"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/prometheus/exporter-toolkit/web"

	"github.com/clockwatch/clockwatch/internal/config"
	"github.com/clockwatch/clockwatch/internal/exporter"
	"github.com/clockwatch/clockwatch/internal/hostclock/hostclocktest"
	"github.com/clockwatch/clockwatch/internal/kernel"
	"github.com/clockwatch/clockwatch/internal/timesource"
)

func webConfig(addrs ...string) *web.FlagConfig {
	no, empty := false, ""
	return &web.FlagConfig{WebListenAddresses: &addrs, WebSystemdSocket: &no, WebConfigFile: &empty}
}

// serve runs serveHTTP on a loopback port until the test ends.
func serve(t *testing.T, d *Daemon, h http.Handler) string {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(t.Context())
	done := make(chan error, 1)
	go func() { done <- d.serveHTTP(ctx, []net.Listener{l}, h) }()
	t.Cleanup(func() {
		cancel()
		<-done
	})
	return l.Addr().String()
}

func get(addr string, timeout time.Duration, keepAlive bool) error {
	tr := &http.Transport{DisableKeepAlives: !keepAlive}
	c := &http.Client{Transport: tr, Timeout: timeout}
	resp, err := c.Get("http://" + addr + "/")
	if err != nil {
		return err
	}
	defer resp.Body.Close()
	_, err = io.Copy(io.Discard, resp.Body)
	return err
}

// HTTP connections are capped: silent connections beyond the cap wait in
// the backlog (no file descriptor), and idle keep-alive connections give
// their place to a new one.
func TestHTTPConnectionCap(t *testing.T) {
	t.Parallel()
	d := New(nil, Options{Web: webConfig("127.0.0.1:0"), MaxHTTPConns: 8}, slog.New(slog.DiscardHandler))
	addr := serve(t, d, http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) { fmt.Fprintln(w, "ok") }))

	// 8 keep-alive clients, each left idle after its request.
	var idle []*http.Transport
	for i := range 8 {
		tr := &http.Transport{}
		idle = append(idle, tr)
		resp, err := (&http.Client{Transport: tr, Timeout: 5 * time.Second}).Get("http://" + addr + "/")
		if err != nil {
			t.Fatalf("keep-alive client %d: %v", i, err)
		}
		io.Copy(io.Discard, resp.Body)
		resp.Body.Close()
	}
	if err := get(addr, 5*time.Second, false); err != nil {
		t.Fatalf("a new client with the cap taken by idle keep-alive connections: %v", err)
	}
	for _, tr := range idle {
		tr.CloseIdleConnections()
	}

	// 8 connections that send nothing hold the cap for a moment, then give
	// way to a client that talks.
	var silent []net.Conn
	for range 8 {
		c, err := net.Dial("tcp", addr)
		if err != nil {
			t.Fatal(err)
		}
		defer c.Close()
		silent = append(silent, c)
	}
	time.Sleep(100 * time.Millisecond) // let the server accept them
	if err := get(addr, 300*time.Millisecond, false); err == nil {
		t.Errorf("a 9th connection was served at once while 8 silent ones held the cap of 8")
	}
	if err := get(addr, 5*time.Second, false); err != nil {
		t.Errorf("a 9th connection not served after the silent ones' grace: %v", err)
	}
}

// Every phase of an HTTP exchange has a timeout.
func TestHTTPTimeouts(t *testing.T) {
	t.Parallel()
	srv := newHTTPServer(http.NotFoundHandler(), newConnLimiter(1))
	for name, d := range map[string]time.Duration{"ReadHeaderTimeout": srv.ReadHeaderTimeout, "ReadTimeout": srv.ReadTimeout,
		"WriteTimeout": srv.WriteTimeout, "IdleTimeout": srv.IdleTimeout} {
		if d <= 0 || d > 5*time.Minute {
			t.Errorf("%s = %s, want a timeout", name, d)
		}
	}
}

// The landing page links only what is served, and says what /healthz is.
func TestLandingPageLinksResolve(t *testing.T) {
	t.Parallel()
	cfg := config.Default()
	d := New(&cfg, Options{Web: webConfig("127.0.0.1:0")}, slog.New(slog.DiscardHandler))
	reg, err := exporter.NewRegistry()
	if err != nil {
		t.Fatal(err)
	}
	addr := serve(t, d, d.handler(reg))
	resp, err := http.Get("http://" + addr + "/")
	if err != nil {
		t.Fatal(err)
	}
	body, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	page := string(body)
	if strings.Contains(page, "branch=,") || strings.Contains(page, "version=dev") {
		t.Errorf("landing page shows an unstamped version: %s", page[strings.Index(page, "Version"):][:80])
	}
	if !strings.Contains(page, "Liveness") {
		t.Errorf("landing page does not call /healthz liveness")
	}
	for _, href := range hrefs(page) {
		if strings.HasPrefix(href, "http") {
			continue
		}
		r, err := http.Get("http://" + addr + "/" + strings.TrimPrefix(href, "/"))
		if err != nil {
			t.Fatal(err)
		}
		r.Body.Close()
		if r.StatusCode != http.StatusOK {
			t.Errorf("landing page links %s, which answers %d", href, r.StatusCode)
		}
	}
}

func hrefs(page string) []string {
	var out []string
	for rest := page; ; {
		_, after, ok := strings.Cut(rest, `href="`)
		if !ok {
			return out
		}
		href, tail, _ := strings.Cut(after, `"`)
		out, rest = append(out, href), tail
	}
}

// A start that fails (the HTTP port in use) leaves no stepdown socket or
// lock file behind.
func TestFailedStartLeavesNoSocket(t *testing.T) {
	t.Parallel()
	busy, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer busy.Close()
	dir := t.TempDir()
	cfg := config.Default()
	cfg.Journal.Dir = filepath.Join(dir, "state")
	cfg.Stepdown.Socket = filepath.Join(dir, "run", "stepdown.sock")
	cfg.ClockBound.Path = filepath.Join(dir, "run", "clockbound", "shm0") // never the host's /run/clockwatch
	cfg.Chrony.Mode = timesource.ModeOff
	d := New(&cfg, Options{Web: webConfig(busy.Addr().String()), Clocks: &hostclocktest.Clocks{Start: kernel.Sample{Real: 1_790_000_000e9, Window: 1000}}},
		slog.New(slog.DiscardHandler))
	err = d.Run(t.Context())
	if err == nil || !strings.Contains(err.Error(), "address already in use") {
		t.Fatalf("Run() = %v, want the port in use", err)
	}
	for _, p := range []string{cfg.Stepdown.Socket, cfg.Stepdown.Socket + ".lock"} {
		if _, err := os.Lstat(p); !os.IsNotExist(err) {
			t.Errorf("%s left behind by a failed start (%v)", p, err)
		}
	}
}

// faults reports whether the slow fault suite runs (make test-faults).
func faults() bool { return os.Getenv("CLOCKWATCH_FAULTS") != "" }

// With the default cap, many idle keep-alive connections (the 1,100
// in the slow suite) never hold more than the cap of descriptors, and a new
// scrape is served at once; in the slow suite, a connection that sends
// nothing is closed by the read-header timeout.
func TestHTTPLimitsAtScale(t *testing.T) {
	t.Parallel()
	n := 300
	if faults() {
		n = 1100
	}
	d := New(nil, Options{Web: webConfig("127.0.0.1:0")}, slog.New(slog.DiscardHandler))
	addr := serve(t, d, http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) { fmt.Fprintln(w, "ok") }))
	var raws []net.Conn
	defer func() {
		for _, c := range raws {
			c.Close()
		}
	}()
	req := []byte("GET / HTTP/1.1\r\nHost: x\r\n\r\n")
	buf := make([]byte, 512)
	for i := range n {
		c, err := net.Dial("tcp", addr)
		if err != nil {
			t.Fatalf("connection %d: %v", i, err)
		}
		raws = append(raws, c)
		// Each is served (taking an idle one's place past the cap), then
		// left idle.
		c.Write(req)
		c.SetReadDeadline(time.Now().Add(5 * time.Second))
		if _, err := c.Read(buf); err != nil {
			t.Fatalf("connection %d: %v", i, err)
		}
	}
	began := time.Now()
	if err := get(addr, 5*time.Second, false); err != nil {
		t.Fatalf("a scrape with %d idle connections held: %v", n, err)
	}
	t.Logf("%d idle keep-alive connections (cap %d): a new scrape served in %s", n, maxHTTPConns, time.Since(began).Round(time.Millisecond))
	if !faults() {
		return
	}
	silent, err := net.Dial("tcp", addr)
	if err != nil {
		t.Fatal(err)
	}
	defer silent.Close()
	silent.SetReadDeadline(time.Now().Add(httpReadHeaderTimeout + 5*time.Second))
	began = time.Now()
	if _, err := silent.Read(buf); err == nil || strings.Contains(err.Error(), "timeout") {
		t.Errorf("a silent connection was not closed by the server within %s: %v", httpReadHeaderTimeout+5*time.Second, err)
	}
	t.Logf("a silent connection closed after %s", time.Since(began).Round(time.Millisecond))
}

// TestHTTPRequestsPaced: past a burst, requests are served at
// httpRequestRate, and one whose client would leave before its turn is not
// served at all (issue 32: 64 connections asking for /metrics in a loop
// took the processors the stepdown announcements needed).
func TestHTTPRequestsPaced(t *testing.T) {
	t.Parallel()
	served := 0
	l := newConnLimiter(8)
	var busy []string
	l.busy = func(why string) { busy = append(busy, why) }
	h := l.paced(http.HandlerFunc(func(http.ResponseWriter, *http.Request) { served++ }))
	get := func(ctx context.Context) {
		h.ServeHTTP(httptest.NewRecorder(), httptest.NewRequestWithContext(ctx, http.MethodGet, "/metrics", nil))
	}
	for range httpBurst {
		get(context.Background())
	}
	if served != httpBurst {
		t.Fatalf("the burst: %d of %d requests served", served, httpBurst)
	}
	// Within the pace: nothing competes with the announcements.
	if len(busy) != 0 {
		t.Fatalf("the burst told busy %q", busy)
	}
	// The next turn is 1/httpRequestRate (31 ms) away: a client that waits
	// 5 ms is gone before it.
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Millisecond)
	defer cancel()
	get(ctx)
	if served != httpBurst {
		t.Errorf("a request whose client leaves before its turn was served")
	}
	get(context.Background())
	if served != httpBurst+1 {
		t.Errorf("a request that waits for its turn was not served")
	}
	// Beyond it: a flood, which the daemon meets with a second Go
	// processor (procs.Procs.Busy).
	if len(busy) != 2 || busy[0] != "HTTP requests beyond their pace" {
		t.Errorf("two requests beyond the pace told busy %q, want twice that HTTP requests are beyond their pace", busy)
	}
	// The probes have their own pace: a kubelet's /healthz is answered at
	// once while scrapes wait.
	ctx, cancel = context.WithTimeout(context.Background(), 5*time.Millisecond)
	defer cancel()
	h.ServeHTTP(httptest.NewRecorder(), httptest.NewRequestWithContext(ctx, http.MethodGet, "/healthz", nil))
	if served != httpBurst+2 {
		t.Errorf("a liveness probe waited behind the scrapes' pace")
	}
}
