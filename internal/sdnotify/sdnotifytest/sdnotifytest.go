package sdnotifytest

import (
	"errors"
	"fmt"
	"net"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"
)

// Socket is a listening unixgram socket standing in for systemd's.
type Socket struct {
	// Addr is the value to put in $NOTIFY_SOCKET.
	Addr string

	conn *net.UnixConn
	msgs chan []string
	done chan struct{}

	mu   sync.Mutex
	seen [][]string
}

// Listen opens a fake notification socket at a filesystem path, removed when
// the test ends. The directory is short-named: unix socket paths hold at
// most 107 bytes and t.TempDir names can be longer.
func Listen(t testing.TB) *Socket {
	t.Helper()
	dir, err := os.MkdirTemp("", "sdnotify")
	if err != nil {
		t.Fatalf("creating a directory for the fake notify socket: %v", err)
	}
	t.Cleanup(func() { os.RemoveAll(dir) })
	return listen(t, filepath.Join(dir, "notify.sock"))
}

// ListenAbstract opens a fake notification socket in the abstract namespace
// (Addr starts with '@'), as systemd itself uses for some services.
func ListenAbstract(t testing.TB) *Socket {
	t.Helper()
	return listen(t, fmt.Sprintf("@clockwatch-sdnotifytest-%d-%d", os.Getpid(), time.Now().UnixNano()))
}

func listen(t testing.TB, addr string) *Socket {
	t.Helper()
	conn, err := net.ListenUnixgram("unixgram", &net.UnixAddr{Name: addr, Net: "unixgram"})
	if err != nil {
		t.Fatalf("listening on fake notify socket %s: %v", addr, err)
	}
	s := &Socket{Addr: addr, conn: conn, msgs: make(chan []string, 1024), done: make(chan struct{})}
	go s.read()
	t.Cleanup(func() {
		conn.Close()
		<-s.done
	})
	return s
}

func (s *Socket) read() {
	defer close(s.done)
	defer close(s.msgs)
	buf := make([]byte, 64<<10)
	for {
		n, _, err := s.conn.ReadFromUnix(buf)
		if err != nil {
			return
		}
		lines := strings.Split(strings.TrimRight(string(buf[:n]), "\n"), "\n")
		s.mu.Lock()
		s.seen = append(s.seen, lines)
		s.mu.Unlock()
		select {
		case s.msgs <- lines:
		default: // a test that does not read its messages still sees them in Seen
		}
	}
}

// Next returns the lines of the next datagram, or an error after timeout.
func (s *Socket) Next(timeout time.Duration) ([]string, error) {
	select {
	case m, ok := <-s.msgs:
		if !ok {
			return nil, errors.New("notify socket closed")
		}
		return m, nil
	case <-time.After(timeout):
		return nil, fmt.Errorf("no notification within %v", timeout)
	}
}

// WaitFor reads datagrams until one contains a line for which match is
// true, and returns that datagram's lines. It fails the test after timeout,
// listing what did arrive.
func (s *Socket) WaitFor(t testing.TB, timeout time.Duration, what string, match func(line string) bool) []string {
	t.Helper()
	deadline := time.Now().Add(timeout)
	for {
		m, err := s.Next(max(time.Until(deadline), 0))
		if err != nil {
			seen := s.Seen()
			if len(seen) > 20 {
				t.Fatalf("waiting for %s on the notify socket: %v; received %d datagrams, the first 5 and the last 15: %q ... %q",
					what, err, len(seen), seen[:5], seen[len(seen)-15:])
			}
			t.Fatalf("waiting for %s on the notify socket: %v; received %q", what, err, seen)
		}
		if slices.ContainsFunc(m, match) {
			return m
		}
	}
}

// WaitForLine is WaitFor for an exact line such as "READY=1".
func (s *Socket) WaitForLine(t testing.TB, timeout time.Duration, line string) []string {
	t.Helper()
	return s.WaitFor(t, timeout, line, func(l string) bool { return l == line })
}

// Seen returns every datagram received so far, each as its lines.
func (s *Socket) Seen() [][]string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return slices.Clone(s.seen)
}
