package ntpd

import (
	"context"
	"flag"
	"os"
	"path/filepath"
	"time"

	"github.com/clockwatch/clockwatch/internal/testtool"
)

var (
	update  = flag.Bool("update", false, "rewrite the golden files in testdata/")
	capture = flag.Bool("capture", false, "capture ntpd's replies again into testdata/ (needs ntpsec's ntpd and unshare)")
)

// captureReplies polls once more through a recording connection; the
// namespaced test writes the replies to the package's testdata/ (the
// working directory is the package directory there too).
func captureReplies(c *Client, _ string) error {
	c.Close()
	var rec recordingConn
	c.dial = func(ctx context.Context, a string) (Conn, error) {
		conn, err := dialUDP(ctx, a)
		rec.Conn = conn
		return &rec, err
	}
	if _, err := c.Poll(context.Background()); err != nil {
		return err
	}
	if err := os.MkdirAll("testdata", 0o755); err != nil {
		return err
	}
	return os.WriteFile(filepath.Join("testdata", "ntpsec-local-refclock.replies"), testtool.EncodeDatagrams(rec.replies), 0o644)
}

// recordingConn keeps every datagram read.
type recordingConn struct {
	Conn
	replies [][]byte
}

func (r *recordingConn) Read(p []byte) (int, error) {
	n, err := r.Conn.Read(p)
	if err == nil {
		r.replies = append(r.replies, append([]byte(nil), p[:n]...))
	}
	return n, err
}

func decodeReplies(b []byte) [][]byte {
	rs, _ := testtool.DecodeDatagrams(b) // a truncated file fails the comparison after
	return rs
}

// replayConn answers each request with the next captured reply, with the
// request's sequence number.
type replayConn struct {
	replies [][]byte
	next    int
	seq     [2]byte
	pending bool
}

func (r *replayConn) Write(p []byte) (int, error) {
	copy(r.seq[:], p[2:4])
	r.pending = true
	return len(p), nil
}

func (r *replayConn) Read(p []byte) (int, error) {
	for r.next < len(r.replies) {
		b := r.replies[r.next]
		r.next++
		n := copy(p, b)
		if n >= 4 {
			copy(p[2:4], r.seq[:])
		}
		// A multi-packet answer continues with the next datagram.
		if n >= 2 && p[1]&0x20 == 0 {
			r.pending = false
		}
		return n, nil
	}
	return 0, timeoutError{}
}

func (r *replayConn) SetDeadline(time.Time) error { return nil }
func (r *replayConn) Close() error                { return nil }

type timeoutError struct{}

func (timeoutError) Error() string   { return "replay: i/o timeout" }
func (timeoutError) Timeout() bool   { return true }
func (timeoutError) Temporary() bool { return true }
