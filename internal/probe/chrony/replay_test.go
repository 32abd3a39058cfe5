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

// recordingConn keeps the keys of the requests written, oldest first:
// chronyd answers in order.
type recordingConn struct {
	Conn
	d    *recordingDialer
	keys []string
}

func (c *recordingConn) Write(p []byte) (int, error) {
	c.keys = append(c.keys, requestKey(p))
	return c.Conn.Write(p)
}

func (c *recordingConn) Read(p []byte) (int, error) {
	n, err := c.Conn.Read(p)
	if err == nil && len(c.keys) > 0 {
		c.d.mu.Lock()
		c.d.replies[c.keys[0]] = append([]byte(nil), p[:n]...)
		c.d.mu.Unlock()
		c.keys = c.keys[1:]
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
	// queueLen is the reply queue's length; 0: replayQueueLen.
	queueLen int
	// dropOnce is the key of a reply dropped the first time it is sent.
	dropOnce string
	// conn is the last connection dialled.
	conn *replayConn
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
	d.conn = &replayConn{d: d}
	return d.conn, tr, "replay:" + d.dir, nil
}

// replayConn answers each request with its captured reply, queued like
// datagrams on a unix socket: a reply that finds replayQueueLen replies
// waiting is dropped, as chronyd drops it.
type replayConn struct {
	d       *replayDialer
	pending [][]byte
	closed  bool
	// dropped counts the replies that found the queue full; most is the
	// longest the queue was.
	dropped, most int
}

const replayQueueLen = 10

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
			return len(p), nil
		}
	}
	b = append([]byte(nil), b...)
	if len(b) >= 20 {
		copy(b[16:20], p[8:12])
	}
	if key == c.d.dropOnce {
		c.d.dropOnce = ""
		c.dropped++
		return len(p), nil
	}
	if len(c.pending) == c.queueLen() {
		c.dropped++
		return len(p), nil
	}
	c.pending = append(c.pending, b)
	c.most = max(c.most, len(c.pending))
	return len(p), nil
}

func (c *replayConn) queueLen() int {
	if c.d.queueLen > 0 {
		return c.d.queueLen
	}
	return replayQueueLen
}

func (c *replayConn) Read(p []byte) (int, error) {
	if len(c.pending) == 0 {
		return 0, timeoutError{}
	}
	n := copy(p, c.pending[0])
	c.pending = c.pending[1:]
	return n, nil
}

func (c *replayConn) SetDeadline(time.Time) error { return nil }
func (c *replayConn) Close() error                { c.closed = true; return nil }

type timeoutError struct{}

func (timeoutError) Error() string   { return "replay: i/o timeout" }
func (timeoutError) Timeout() bool   { return true }
func (timeoutError) Temporary() bool { return true }
