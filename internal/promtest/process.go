package promtest

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"
)

// startTimeout bounds how long a server may take to become ready.
const startTimeout = 60 * time.Second

// process is one server started by a test, known by its PID.
type process struct {
	name    string
	cmd     *exec.Cmd
	logPath string
	done    chan struct{} // closed when the process has exited
	err     error         // its exit status, valid after done
}

// FreeAddr returns a 127.0.0.1 address for a server the test starts later
// (a scrape target Prometheus must know from the start, or a server that
// restarts where it was). Its port is free now and lies below the kernel's
// ephemeral port range, so that neither a listener on port 0 nor an
// outgoing connection's source port takes it in the meantime.
func FreeAddr(t testing.TB) string {
	t.Helper()
	low := ephemeralLow()
	const base = 20000
	for range 200 {
		addr := net.JoinHostPort("127.0.0.1", strconv.Itoa(base+rand.IntN(low-base)))
		l, err := net.Listen("tcp", addr)
		if err != nil {
			continue // in use: try another
		}
		if err := l.Close(); err != nil {
			t.Fatalf("releasing %s: %v", addr, err)
		}
		return addr
	}
	t.Fatalf("no free loopback port between %d and %d", base, low)
	return ""
}

// ephemeralLow returns the first port of the kernel's ephemeral range
// (net.ipv4.ip_local_port_range), 32768 when it cannot be read or is too
// low to leave room below it.
func ephemeralLow() int {
	b, err := os.ReadFile("/proc/sys/net/ipv4/ip_local_port_range")
	if err != nil {
		return 32768
	}
	f := strings.Fields(string(b))
	if len(f) == 0 {
		return 32768
	}
	low, err := strconv.Atoi(f[0])
	if err != nil || low < 21000 {
		return 32768
	}
	return low
}

// freeAddr returns a 127.0.0.1 address with a port nobody listened on a
// moment ago. Another process can take it before the server binds it: start
// retries with a new one when that happens.
func freeAddr() (string, error) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return "", fmt.Errorf("finding a free loopback port: %w", err)
	}
	addr := l.Addr().String()
	if err := l.Close(); err != nil {
		return "", fmt.Errorf("releasing port %s: %w", addr, err)
	}
	return addr, nil
}

// startServer runs bin with the arguments args(addr) on a free loopback
// address and waits until GET /-/ready answers 200. It retries with another
// port when the chosen one was taken in the meantime. The process is stopped
// when the test ends.
func startServer(t testing.TB, name, bin, dir string, args func(addr string) []string) (*process, string) {
	t.Helper()
	for attempt := 1; ; attempt++ {
		addr, err := freeAddr()
		if err != nil {
			t.Fatal(err)
		}
		p, err := spawn(name, bin, dir, attempt, args(addr))
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() {
			if err := p.stop(); err != nil {
				t.Errorf("%v; log:\n%s", err, p.tail(40))
			}
		})
		err = waitReady(p, "http://"+addr+"/-/ready", startTimeout)
		if err == nil {
			return p, addr
		}
		if attempt < 3 && strings.Contains(p.tail(20), "address already in use") {
			continue
		}
		t.Fatalf("%v; log:\n%s", err, p.tail(40))
	}
}

// spawn starts the process with its output going to a log file in dir.
func spawn(name, bin, dir string, attempt int, args []string) (*process, error) {
	logPath := filepath.Join(dir, fmt.Sprintf("%s.%d.log", name, attempt))
	logFile, err := os.Create(logPath)
	if err != nil {
		return nil, fmt.Errorf("creating %s's log: %w", name, err)
	}
	defer logFile.Close() // the child has its own descriptor
	cmd := exec.Command(bin, args...)
	cmd.Dir = dir
	cmd.Stdout, cmd.Stderr = logFile, logFile
	cmd.SysProcAttr = &syscall.SysProcAttr{Pdeathsig: syscall.SIGKILL}
	if err := cmd.Start(); err != nil {
		return nil, fmt.Errorf("starting %s: %w", name, err)
	}
	p := &process{name: name, cmd: cmd, logPath: logPath, done: make(chan struct{})}
	go func() {
		p.err = cmd.Wait()
		close(p.done)
	}()
	return p, nil
}

// waitReady polls url until it answers 200, the process exits or the
// timeout passes.
func waitReady(p *process, url string, timeout time.Duration) error {
	ctx, cancel := context.WithTimeout(context.Background(), timeout)
	defer cancel()
	client := &http.Client{Timeout: time.Second}
	tick := time.NewTicker(20 * time.Millisecond)
	defer tick.Stop()
	for {
		req, err := http.NewRequestWithContext(ctx, http.MethodGet, url, nil)
		if err != nil {
			return fmt.Errorf("polling %s: %w", url, err)
		}
		if resp, err := client.Do(req); err == nil {
			resp.Body.Close()
			if resp.StatusCode == http.StatusOK {
				return nil
			}
		}
		select {
		case <-p.done:
			return fmt.Errorf("%s (pid %d) exited before it was ready: %v", p.name, p.cmd.Process.Pid, p.err)
		case <-ctx.Done():
			return fmt.Errorf("%s (pid %d) not ready at %s within %s", p.name, p.cmd.Process.Pid, url, timeout)
		case <-tick.C:
		}
	}
}

// stop sends SIGTERM to the process's PID and waits for it to exit, killing
// it after 10 s. An exit other than a clean one after SIGTERM is an error.
func (p *process) stop() error {
	select {
	case <-p.done:
		return nil // exited already; the caller saw why when it mattered
	default:
	}
	if err := p.cmd.Process.Signal(syscall.SIGTERM); err != nil && !errors.Is(err, os.ErrProcessDone) {
		return fmt.Errorf("stopping %s (pid %d): %w", p.name, p.cmd.Process.Pid, err)
	}
	select {
	case <-p.done:
		return nil
	case <-time.After(10 * time.Second):
		_ = p.cmd.Process.Kill()
		<-p.done
		return fmt.Errorf("%s (pid %d) did not stop within 10s of SIGTERM; killed", p.name, p.cmd.Process.Pid)
	}
}

// tail returns the last n lines the process logged.
func (p *process) tail(n int) string {
	b, err := os.ReadFile(p.logPath)
	if err != nil {
		return fmt.Sprintf("(reading %s: %v)", p.logPath, err)
	}
	lines := strings.Split(strings.TrimRight(string(b), "\n"), "\n")
	if len(lines) > n {
		lines = lines[len(lines)-n:]
	}
	return strings.Join(lines, "\n")
}
