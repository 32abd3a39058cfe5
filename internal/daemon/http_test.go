package daemon

import (
	"context"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/prometheus/exporter-toolkit/web"

	"github.com/clockwatch/clockwatch/config"
	"github.com/clockwatch/clockwatch/exporter"
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

	// 8 connections that never send a request hold the cap.
	var silent []net.Conn
	for range 8 {
		c, err := net.Dial("tcp", addr)
		if err != nil {
			t.Fatal(err)
		}
		silent = append(silent, c)
	}
	time.Sleep(100 * time.Millisecond) // let the server accept them
	if err := get(addr, 300*time.Millisecond, false); err == nil {
		t.Errorf("a 9th connection was served while 8 silent ones held the cap of 8")
	}
	for _, c := range silent {
		c.Close()
	}
	if err := get(addr, 5*time.Second, false); err != nil {
		t.Errorf("after the silent connections closed: %v", err)
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
	cfg.Chrony.Enabled = false
	d := New(&cfg, Options{Web: webConfig(busy.Addr().String()), Clocks: &steppableClocks{gap: 1_790_000_000e9}},
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
