package ptp

import (
	"context"
	"encoding/binary"
	"encoding/json"
	"errors"
	"flag"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/clockwatch/clockwatch/internal/testtool"
	"github.com/google/go-cmp/cmp"
)

var (
	update  = flag.Bool("update", false, "rewrite the golden files in testdata/")
	capture = flag.Bool("capture", false, "capture ptp4l's replies again into testdata/ (needs ptp4l, unshare, nsenter, ip)")
)

// captureReplies polls ptp4l once through a recording connection and
// writes the replies to testdata/name (the namespaced test's working
// directory is the package directory too).
func captureReplies(path, replyDir, name string) error {
	rec := &recordingDialer{Dialer: newUnixDialer(replyDir)}
	c := NewClient(path, 0, replyDir, 200*time.Millisecond)
	c.dial = rec
	defer c.Close()
	if _, err := c.Poll(context.Background()); err != nil {
		return err
	}
	return os.WriteFile(filepath.Join("testdata", name), testtool.EncodeDatagrams(rec.conn.replies), 0o644)
}

type recordingDialer struct {
	Dialer
	conn *recordingConn
}

func (r *recordingDialer) Dial(ctx context.Context, path string) (Conn, error) {
	c, err := r.Dialer.Dial(ctx, path)
	if err != nil {
		return nil, err
	}
	r.conn = &recordingConn{Conn: c}
	return r.conn, nil
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

func decodeReplies(t testing.TB, b []byte) [][]byte {
	t.Helper()
	ds, err := testtool.DecodeDatagrams(b)
	if err != nil {
		t.Fatalf("captured replies: %v", err)
	}
	return ds
}

// replayConn answers each request with the next captured reply, its
// sequence number rewritten to the request's; extra replies can be queued
// before it (stale ones).
type replayConn struct {
	replies [][]byte
	seq     uint16
	stale   [][]byte
	writes  int
	closed  bool
}

func (r *replayConn) Write(p []byte) (int, error) {
	r.seq = binary.BigEndian.Uint16(p[offSequence:])
	r.writes++
	return len(p), nil
}

func (r *replayConn) Read(p []byte) (int, error) {
	if len(r.stale) > 0 {
		n := copy(p, r.stale[0])
		r.stale = r.stale[1:]
		return n, nil
	}
	if len(r.replies) == 0 {
		return 0, os.ErrDeadlineExceeded
	}
	n := copy(p, r.replies[0])
	binary.BigEndian.PutUint16(p[offSequence:], r.seq)
	r.replies = r.replies[1:]
	return n, nil
}

func (r *replayConn) SetDeadline(time.Time) error { return nil }
func (r *replayConn) Close() error                { r.closed = true; return nil }

type replayDialer struct{ conn *replayConn }

func (d replayDialer) Dial(context.Context, string) (Conn, error) {
	if d.conn == nil {
		return nil, errors.New("no ptp4l")
	}
	return d.conn, nil
}

func replayClient(t *testing.T, file string) (*Client, *replayConn) {
	t.Helper()
	b, err := os.ReadFile(filepath.Join("testdata", file))
	if err != nil {
		t.Fatal(err)
	}
	rc := &replayConn{replies: decodeReplies(t, b)}
	c := NewClient("/run/ptp4l-test", 0, "", time.Second)
	c.dial = replayDialer{rc}
	return c, rc
}

// TestReplay decodes replies captured from a real ptp4l 3.1 (go test -run
// TestPtp4l -capture) and compares them with golden JSON.
func TestReplay(t *testing.T) {
	t.Parallel()
	for _, name := range []string{"ptp4l-3.1-grandmaster", "ptp4l-3.1-slave-uncalibrated"} {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			c, rc := replayClient(t, name+".replies")
			d, err := c.Poll(context.Background())
			if err != nil {
				t.Fatal(err)
			}
			if rc.writes != 6 || len(rc.replies) != 0 {
				t.Errorf("%d requests, %d replies left: want 6 requests, every reply read", rc.writes, len(rc.replies))
			}
			got, _ := json.MarshalIndent(d, "", "  ")
			golden := filepath.Join("testdata", name+".golden.json")
			if *update {
				if err := os.WriteFile(golden, append(got, '\n'), 0o644); err != nil {
					t.Fatal(err)
				}
			}
			want, err := os.ReadFile(golden)
			if err != nil {
				t.Fatal(err)
			}
			if diff := cmp.Diff(string(want), string(got)+"\n"); diff != "" {
				t.Errorf("decoded %s differs from %s (-want +got):\n%s", name, golden, diff)
			}
		})
	}
}

// TestStaleReplies: replies to an earlier request (a poll that timed out)
// are skipped by their sequence number.
func TestStaleReplies(t *testing.T) {
	t.Parallel()
	c, rc := replayClient(t, "ptp4l-3.1-slave-uncalibrated.replies")
	stale := append([]byte(nil), rc.replies[1]...) // a CURRENT_DATA_SET of another sequence
	binary.BigEndian.PutUint16(stale[offSequence:], 1)
	rc.stale = [][]byte{stale, stale}
	c.seq = 100
	d, err := c.Poll(context.Background())
	if err != nil || d.GrandmasterIdentity == "" || len(d.Ports) != 1 {
		t.Errorf("Poll() with stale replies queued = %+v, %v", d, err)
	}
}

// TestClientErrors: a refused request, a short datagram and a silent ptp4l
// are errors that name ptp4l's socket, and the connection is re-dialled.
func TestClientErrors(t *testing.T) {
	t.Parallel()
	refused := make([]byte, offData+2)
	refused[0] = 0x0d
	refused[offAction] = 2
	binary.BigEndian.PutUint16(refused[offTLVType:], tlvError)
	binary.BigEndian.PutUint16(refused[offMgmtID:], 0x0002) // NO_SUCH_ID
	wrongID := make([]byte, offData+2)
	wrongID[0] = 0x0d
	wrongID[offAction] = 2
	binary.BigEndian.PutUint16(wrongID[offTLVType:], 0x0001)
	binary.BigEndian.PutUint16(wrongID[offMgmtID:], 0x2001) // CURRENT_DATA_SET
	notAResponse := append([]byte(nil), wrongID...)
	notAResponse[offAction] = 0 // a GET: another client's request, say
	many := make([][]byte, 16)
	for i := range many {
		many[i] = notAResponse
	}
	for _, tc := range []struct {
		name    string
		replies [][]byte
		want    string
	}{
		{"wrong management ID", [][]byte{wrongID}, "ptp4l at /run/ptp4l-test answered DEFAULT_DATA_SET with management ID 0x2001"},
		{"no answer among 16", many, "ptp4l at /run/ptp4l-test: 16 replies in a row that do not answer the DEFAULT_DATA_SET request"},
		{"refused", [][]byte{refused}, "ptp4l at /run/ptp4l-test refused DEFAULT_DATA_SET: "},
		{"short", [][]byte{{0x0d, 2, 0, 4}}, "ptp4l at /run/ptp4l-test answered DEFAULT_DATA_SET with 4 bytes that are not a management message"},
		{"silent", nil, "ptp4l did not answer DEFAULT_DATA_SET within 1s on /run/ptp4l-test: is ptp.domain (0) ptp4l's domainNumber?"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			rc := &replayConn{replies: tc.replies}
			c := NewClient("/run/ptp4l-test", 0, "", time.Second)
			c.dial = replayDialer{rc}
			_, err := c.Poll(context.Background())
			if err == nil || len(err.Error()) < len(tc.want) || err.Error()[:len(tc.want)] != tc.want {
				t.Errorf("Poll() = %v, want an error starting %q", err, tc.want)
			}
			if !rc.closed || c.conn != nil {
				t.Error("the connection was not closed after the error")
			}
		})
	}
}

// BenchmarkPollReplay is the client's own cost of a poll (encoding six
// requests, decoding the captured replies), without ptp4l's.
func BenchmarkPollReplay(b *testing.B) {
	raw, err := os.ReadFile(filepath.Join("testdata", "ptp4l-3.1-slave-uncalibrated.replies"))
	if err != nil {
		b.Fatal(err)
	}
	replies := decodeReplies(b, raw)
	c := NewClient("/run/ptp4l-test", 0, "", time.Second)
	rc := &replayConn{}
	c.dial = replayDialer{rc}
	b.ReportAllocs()
	for b.Loop() {
		rc.replies = replies
		if _, err := c.Poll(context.Background()); err != nil {
			b.Fatal(err)
		}
	}
}
