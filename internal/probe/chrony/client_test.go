package chrony

import (
	"context"
	"encoding/binary"
	"encoding/json"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
)

// golden compares got with testdata/name, or rewrites it with -update.
func golden(t *testing.T, name string, got []byte) {
	t.Helper()
	path := filepath.Join("testdata", name)
	if *update {
		if err := os.WriteFile(path, got, 0o644); err != nil {
			t.Fatal(err)
		}
		return
	}
	want, err := os.ReadFile(path)
	if err != nil {
		t.Fatalf("reading golden file (run with -update to create it): %v", err)
	}
	if diff := cmp.Diff(string(want), string(got)); diff != "" {
		t.Errorf("%s mismatch (-want +got):\n%s", path, diff)
	}
}

func TestPollReplay(t *testing.T) {
	t.Parallel()
	for _, dir := range []string{"unix-synced", "unix-unsynced", "udp-synced", "udp-unsynced"} {
		t.Run(dir, func(t *testing.T) {
			t.Parallel()
			tr := TransportUnix
			if strings.HasPrefix(dir, "udp") {
				tr = TransportUDP
			}
			d := &replayDialer{dir: filepath.Join("testdata", dir), transport: tr}
			c := newClient(d, time.Second, nil)
			data, err := c.Poll(context.Background())
			if err != nil {
				t.Fatalf("Poll: %v", err)
			}
			b, err := json.MarshalIndent(data, "", "  ")
			if err != nil {
				t.Fatal(err)
			}
			golden(t, dir+".golden.json", append(b, '\n'))
		})
	}
}

func TestPollSynced(t *testing.T) {
	t.Parallel()
	c := newClient(&replayDialer{dir: "testdata/unix-synced"}, time.Second, nil)
	d, err := c.Poll(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	tr := d.Tracking
	// The servers served +2 s: the local clock is 2 s behind.
	if tr.SystemOffset > -1.99 || tr.SystemOffset < -2.01 || !tr.Synchronised() || tr.Leap != LeapNormal {
		t.Errorf("tracking = %+v, want synchronised, leap normal, system offset about -2 s", tr)
	}
	if len(d.Sources) != 8 || d.SelectableSources() < 2 {
		t.Errorf("got %d sources, %d selectable; want 8 and at least 2", len(d.Sources), d.SelectableSources())
	}
	for _, s := range d.Sources {
		if s.Stats == nil || s.Mode != "client" || s.Name != s.Address {
			t.Errorf("source %+v: want client mode, stats, and its configured name (the address)", s)
		}
	}
}

// mutate returns the captured replies of dir with the reply to key changed.
func mutate(t *testing.T, dir, key string, f func([]byte) []byte) map[string][]byte {
	t.Helper()
	b, err := os.ReadFile(filepath.Join("testdata", dir, key+".bin"))
	if err != nil {
		t.Fatal(err)
	}
	return map[string][]byte{key: f(b)}
}

func setStatus(s uint16) func([]byte) []byte {
	return func(b []byte) []byte { binary.BigEndian.PutUint16(b[8:10], s); return b }
}

func TestPollErrors(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name      string
		transport Transport
		key       string
		change    func([]byte) []byte
		silent    bool   // chronyd does not answer at all
		want      string // part of the error
		wantErr   error
	}{
		{name: "empty tracking reply", key: "tracking", change: func(b []byte) []byte { return b[:0] }, wantErr: errShortReply},
		{name: "header cut short", key: "tracking", change: func(b []byte) []byte { return b[:20] }, wantErr: errShortReply},
		{name: "tracking body cut short", key: "tracking", change: func(b []byte) []byte { return b[:40] }, want: "unexpected EOF"},
		{name: "source data cut short", key: "source_data_3", change: func(b []byte) []byte { return b[:30] }, want: "source #3"},
		{name: "request echoed", key: "tracking", change: func(b []byte) []byte { b[1] = 1; return b }, wantErr: errNotReply},
		{name: "reply to another command", key: "tracking", change: func(b []byte) []byte { b[5] = 14; return b }, want: "reply to command 14 received for command 33"},
		{name: "unknown reply type", key: "tracking", change: func(b []byte) []byte { b[7] = 99; return b }, want: "not implemented reply type 99"},
		{name: "refused over UDP", transport: TransportUDP, key: "tracking", change: setStatus(statusUnauth), want: "only tracking, sources, sourcestats and activity are allowed"},
		{name: "old protocol", key: "tracking", change: setStatus(statusBadPktVersion), want: "command protocol version 6"},
		{name: "failed", key: "n_sources", change: setStatus(1), want: `rejected "sources"`},
		{name: "absurd source count", key: "n_sources", change: func(b []byte) []byte { binary.BigEndian.PutUint32(b[28:32], 1<<31); return b }, want: "more than 4096"},
		{name: "no answer on the socket", silent: true, want: "chrony.reply_socket_dir"},
		{name: "no answer over UDP", transport: TransportUDP, silent: true, want: "cmdport 0"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			d := &replayDialer{dir: "testdata/unix-synced", transport: tc.transport}
			if tc.silent {
				d.dir = "testdata/does-not-exist"
			} else {
				d.replies = mutate(t, "unix-synced", tc.key, tc.change)
			}
			c := newClient(d, time.Second, nil)
			_, err := c.Poll(context.Background())
			if err == nil {
				t.Fatal("Poll succeeded, want an error")
			}
			if tc.wantErr != nil && !errors.Is(err, tc.wantErr) {
				t.Errorf("error %q is not %q", err, tc.wantErr)
			}
			if !strings.Contains(err.Error(), tc.want) {
				t.Errorf("error %q does not contain %q", err, tc.want)
			}
			// The connection was dropped: the next poll dials again.
			c.Poll(context.Background())
			if d.dials != 2 {
				t.Errorf("dialled %d times after a failed poll, want 2", d.dials)
			}
		})
	}
}

func TestPollNoSuchSourceStats(t *testing.T) {
	t.Parallel()
	replies := mutate(t, "unix-synced", "sourcestats_2", setStatus(statusNoSuchSource))
	c := newClient(&replayDialer{dir: "testdata/unix-synced", replies: replies}, time.Second, nil)
	d, err := c.Poll(context.Background())
	if err != nil {
		t.Fatalf("Poll: %v", err)
	}
	if d.Sources[2].Stats != nil || d.Sources[1].Stats == nil {
		t.Errorf("stats of sources 1 and 2 = %v, %v; want only source 2's missing", d.Sources[1].Stats, d.Sources[2].Stats)
	}
}

// staleConn answers each request first with a late reply to the request
// before it, then with the right one.
type staleConn struct {
	replayConn
}

func (c *staleConn) Write(p []byte) (int, error) {
	before := len(c.pending)
	n, err := c.replayConn.Write(p)
	if len(c.pending) > before {
		reply := c.pending[len(c.pending)-1]
		old := append([]byte(nil), reply...)
		binary.BigEndian.PutUint32(old[16:20], binary.BigEndian.Uint32(p[8:12])-1)
		c.pending = append(c.pending[:len(c.pending)-1], old, reply)
	}
	return n, err
}

type staleDialer struct{ replayDialer }

func (d *staleDialer) Dial(context.Context) (Conn, Transport, string, error) {
	return &staleConn{replayConn: replayConn{d: &d.replayDialer}}, TransportUnix, "stale", nil
}

func TestPollSkipsStaleReplies(t *testing.T) {
	t.Parallel()
	// Every reply comes with a stray: room for both.
	d := &staleDialer{replayDialer{dir: "testdata/unix-synced", queueLen: 2 * replayQueueLen}}
	c := newClient(d, time.Second, nil)
	if _, err := c.Poll(context.Background()); err != nil {
		t.Fatalf("Poll: %v", err)
	}
	if c.conn.stale == 0 {
		t.Errorf("no stale reply was skipped")
	}
}

type fakeResolver map[string]string

func (f fakeResolver) LookupAddr(_ context.Context, a string) ([]string, error) {
	if n, ok := f[a]; ok {
		return []string{n + "."}, nil
	}
	return nil, errors.New("no such host")
}

func TestSourceNames(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name      string
		transport Transport
		resolver  Resolver
		want      []string
	}{
		// Over UDP chronyd does not tell names; without DNS the address stays.
		{name: "udp without DNS", transport: TransportUDP, want: []string{"127.0.0.11", "127.0.0.12"}},
		{name: "udp with DNS", transport: TransportUDP, resolver: fakeResolver{"127.0.0.11": "ntp1.example"}, want: []string{"ntp1.example", "127.0.0.12"}},
		// Over the socket chronyd's configured name wins over DNS.
		{name: "unix", transport: TransportUnix, resolver: fakeResolver{"127.0.0.11": "ntp1.example"}, want: []string{"configured.example", "127.0.0.12"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			replies := mutate(t, "unix-synced", "sourcename_127.0.0.11", func(b []byte) []byte {
				copy(b[28:], "configured.example\x00")
				return b
			})
			c := newClient(&replayDialer{dir: "testdata/unix-synced", replies: replies, transport: tc.transport}, time.Second, tc.resolver)
			d, err := c.Poll(context.Background())
			if err != nil {
				t.Fatal(err)
			}
			got := []string{d.Sources[0].Name, d.Sources[1].Name}
			if diff := cmp.Diff(tc.want, got); diff != "" {
				t.Errorf("names (-want +got):\n%s", diff)
			}
		})
	}
}

// FuzzReply feeds arbitrary bytes as chronyd's reply to every request: the
// client must return data or an error, never panic or loop.
func FuzzReply(f *testing.F) {
	for _, k := range []string{"tracking", "n_sources", "source_data_0", "sourcestats_0", "sourcename_127.0.0.11"} {
		b, err := os.ReadFile(filepath.Join("testdata", "unix-synced", k+".bin"))
		if err != nil {
			f.Fatal(err)
		}
		f.Add(k, b)
	}
	f.Fuzz(func(t *testing.T, key string, reply []byte) {
		c := newClient(&replayDialer{dir: "testdata/unix-synced", replies: map[string][]byte{key: reply}}, time.Second, nil)
		_, _ = c.Poll(context.Background())
	})
}

// TestPollWindow: over the unix socket a poll keeps as many requests in
// flight as the reply socket's queue holds with room to spare; a dropped
// reply fails that poll and halves the window for the next; over UDP
// requests go one at a time.
func TestPollWindow(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name       string
		transport  Transport
		kernelQlen int    // what the client reads of net.unix.max_dgram_qlen
		queue      int    // the reply queue's real length
		drop       string // a reply chronyd drops once
		firstFails string // part of the first poll's error
		wantMost   []int  // most replies queued at once, per poll
	}{
		{name: "default queue", kernelQlen: 10, queue: 10, wantMost: []int{8, 8}},
		{name: "short queue", kernelQlen: 4, queue: 4, wantMost: []int{2, 2}},
		{name: "no room", kernelQlen: 1, queue: 1, wantMost: []int{1, 1}},
		// The replies at the end of the first window find the queue full.
		{name: "queue shorter than the kernel says", kernelQlen: 10, queue: 5, firstFails: "did not answer", wantMost: []int{5, 4}},
		{name: "a reply dropped in the middle", kernelQlen: 10, queue: 10, drop: "sourcestats_1", firstFails: "dropped its reply", wantMost: []int{7, 4}},
		{name: "udp", transport: TransportUDP, kernelQlen: 10, queue: 10, wantMost: []int{1, 1}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			d := &replayDialer{dir: "testdata/unix-synced", transport: tc.transport, queueLen: tc.queue, dropOnce: tc.drop}
			c := newClient(d, 100*time.Millisecond, nil)
			c.queueLen = func() int { return tc.kernelQlen }
			for i, want := range tc.wantMost {
				data, err := c.Poll(context.Background())
				switch {
				case i == 0 && tc.firstFails != "":
					if err == nil || !strings.Contains(err.Error(), tc.firstFails) {
						t.Fatalf("first poll: error %v, want one saying %q", err, tc.firstFails)
					}
				case err != nil:
					t.Fatalf("poll %d: %v", i+1, err)
				case len(data.Sources) != 8 || data.Sources[7].Stats == nil:
					t.Fatalf("poll %d: %d sources, want 8 with their stats", i+1, len(data.Sources))
				}
				if d.conn.most != want {
					t.Errorf("poll %d: at most %d replies queued, want %d", i+1, d.conn.most, want)
				}
			}
		})
	}
}

// TestSendAheadMismatch: a request written that is not the next one sent
// ahead is refused, never sent in its place.
func TestSendAheadMismatch(t *testing.T) {
	t.Parallel()
	d := &replayDialer{dir: "testdata/unix-synced"}
	conn, _, _, _ := d.Dial(context.Background())
	c := &checkedConn{Conn: conn}
	a, b := make([]byte, 416), make([]byte, 416)
	binary.BigEndian.PutUint16(a[4:6], cmdTracking)
	binary.BigEndian.PutUint32(a[8:12], 7)
	copy(b, a)
	binary.BigEndian.PutUint32(b[8:12], 8)
	if err := c.sendAhead([][]byte{a}); err != nil {
		t.Fatal(err)
	}
	if _, err := c.Write(b); err == nil || !strings.Contains(err.Error(), "sent ahead") {
		t.Errorf("Write of another request: %v, want it refused", err)
	}
	if got := len(d.conn.pending); got != 1 {
		t.Errorf("%d requests reached chronyd, want only the one sent ahead", got)
	}
}
