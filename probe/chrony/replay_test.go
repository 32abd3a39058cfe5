package chrony

import (
	"context"
	"encoding/binary"
	"errors"
	"flag"
	"fmt"
	"net"
	"os"
	"path/filepath"
	"sync"
	"time"
)

var (
	update  = flag.Bool("update", false, "rewrite the golden files in testdata/")
	capture = flag.Bool("capture", false, "capture chronyd's replies again into testdata/ (needs chronyd)")
)

// requestKey names a request by its command and, for per-source commands,
// its index or address: "tracking", "source_data_3", "sourcename_127.0.0.11".
func requestKey(p []byte) string {
	cmd := binary.BigEndian.Uint16(p[4:6])
	arg := p[requestHeadLen:]
	switch cmd {
	case 33:
		return "tracking"
	case 14:
		return "n_sources"
	case 44:
		return "activity"
	case 15:
		return fmt.Sprintf("source_data_%d", int32(binary.BigEndian.Uint32(arg)))
	case 34:
		return fmt.Sprintf("sourcestats_%d", int32(binary.BigEndian.Uint32(arg)))
	case 65:
		family := binary.BigEndian.Uint16(arg[16:18])
		ip := net.IP(arg[:16])
		if family == 1 {
			ip = net.IP(arg[:4])
		}
		return "sourcename_" + ip.String()
	}
	return fmt.Sprintf("command_%d", cmd)
}

// recordingDialer wraps a real dialer and keeps every reply by request key.
type recordingDialer struct {
	inner   Dialer
	mu      sync.Mutex
	replies map[string][]byte
}

func (d *recordingDialer) Dial(ctx context.Context) (Conn, Transport, string, error) {
	c, tr, a, err := d.inner.Dial(ctx)
	if c == nil {
		return nil, tr, a, err
	}
	return &recordingConn{Conn: c, d: d}, tr, a, err
}

type recordingConn struct {
	Conn
	d   *recordingDialer
	key string
}

func (c *recordingConn) Write(p []byte) (int, error) {
	c.key = requestKey(p)
	return c.Conn.Write(p)
}

func (c *recordingConn) Read(p []byte) (int, error) {
	n, err := c.Conn.Read(p)
	if err == nil {
		c.d.mu.Lock()
		c.d.replies[c.key] = append([]byte(nil), p[:n]...)
		c.d.mu.Unlock()
	}
	return n, err
}

func (d *recordingDialer) save(dir string) error {
	if err := os.RemoveAll(dir); err != nil {
		return err
	}
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return err
	}
	d.mu.Lock()
	defer d.mu.Unlock()
	for k, b := range d.replies {
		if err := os.WriteFile(filepath.Join(dir, k+".bin"), b, 0o644); err != nil {
			return err
		}
	}
	return nil
}

// replayDialer serves captured replies from a testdata directory, or from
// a map, with each reply's sequence number set to the request's.
type replayDialer struct {
	dir       string
	replies   map[string][]byte // overrides files
	transport Transport
	dialErr   error
	dials     int
}

func (d *replayDialer) Dial(context.Context) (Conn, Transport, string, error) {
	d.dials++
	if d.dialErr != nil {
		return nil, d.transport, "replay", d.dialErr
	}
	tr := d.transport
	if tr == "" {
		tr = TransportUnix
	}
	return &replayConn{d: d}, tr, "replay:" + d.dir, nil
}

type replayConn struct {
	d       *replayDialer
	pending []byte
	has     bool
	closed  bool
}

var errNoReply = errors.New("replay: no captured reply")

func (c *replayConn) Write(p []byte) (int, error) {
	if want := requestLen(binary.BigEndian.Uint16(p[4:6])); len(p) != want {
		// chronyd drops a request shorter than its reply.
		return 0, fmt.Errorf("replay: request of %d bytes, chronyd wants %d", len(p), want)
	}
	key := requestKey(p)
	b, ok := c.d.replies[key]
	if !ok {
		var err error
		b, err = os.ReadFile(filepath.Join(c.d.dir, key+".bin"))
		if err != nil {
			// Like a chronyd that does not answer.
			c.pending, c.has = nil, false
			return len(p), nil
		}
	}
	b = append([]byte(nil), b...)
	if len(b) >= 20 {
		copy(b[16:20], p[8:12])
	}
	c.pending, c.has = b, true
	return len(p), nil
}

func (c *replayConn) Read(p []byte) (int, error) {
	if !c.has {
		return 0, timeoutError{}
	}
	n := copy(p, c.pending)
	c.pending, c.has = nil, false
	return n, nil
}

func (c *replayConn) SetDeadline(time.Time) error { return nil }
func (c *replayConn) Close() error                { c.closed = true; return nil }

type timeoutError struct{}

func (timeoutError) Error() string   { return "replay: i/o timeout" }
func (timeoutError) Timeout() bool   { return true }
func (timeoutError) Temporary() bool { return true }
