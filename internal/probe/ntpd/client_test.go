package ntpd

import (
	"context"
	"encoding/binary"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/clockwatch/clockwatch/internal/ntptest"
	"github.com/google/go-cmp/cmp"
)

func replayClient(replies [][]byte) *Client {
	c := NewClient("127.0.0.1:123", time.Second)
	c.dial = func(context.Context, string) (Conn, error) { return &replayConn{replies: replies}, nil }
	return c
}

// reply builds a mode 6 response datagram.
func reply(op uint8, status, assoc uint16, more bool, data string) []byte {
	b := make([]byte, 12, 12+len(data)+3)
	b[0] = 3<<3 | 6
	b[1] = 0x80 | op
	if more {
		b[1] |= 0x20
	}
	binary.BigEndian.PutUint16(b[4:6], status)
	binary.BigEndian.PutUint16(b[6:8], assoc)
	binary.BigEndian.PutUint16(b[10:12], uint16(len(data)))
	b = append(b, data...)
	for len(b)%4 != 0 {
		b = append(b, 0)
	}
	return b
}

func TestPollReplayNtpsec(t *testing.T) {
	t.Parallel()
	b, err := os.ReadFile(filepath.Join("testdata", "ntpsec-local-refclock.replies"))
	if err != nil {
		t.Fatal(err)
	}
	c := replayClient(decodeReplies(b))
	d, err := c.Poll(context.Background())
	if err != nil {
		t.Fatalf("Poll: %v", err)
	}
	got, err := json.MarshalIndent(d, "", "  ")
	if err != nil {
		t.Fatal(err)
	}
	got = append(got, '\n')
	path := filepath.Join("testdata", "ntpsec-local-refclock.golden.json")
	if *update {
		if err := os.WriteFile(path, got, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	want, err := os.ReadFile(path)
	if err != nil {
		t.Fatalf("reading golden file (run with -update to create it): %v", err)
	}
	if diff := cmp.Diff(string(want), string(got)); diff != "" {
		t.Errorf("(-want +got):\n%s", diff)
	}
}

// A synchronised ntpd 2 s behind its server: the replies ntpd sends (the
// peer variables split over two datagrams), built by hand because the
// namespaced ntpsec of the integration test cannot synchronise.
func syncedReplies() [][]byte {
	const peer1 = `srcadr=192.0.2.1, srcport=123, dstadr=127.0.0.1, leap=00, stratum=1, precision=-20, rootdelay=0.000, rootdisp=0.500, refid=GPS, reach=0xff, `
	return [][]byte{
		reply(1, 0x0618, 0, false, "\x00\x01\x96\x14"), // association 1, sys.peer
		reply(2, 0x0618, 0, false, `version="ntpd 4.2.8p15@1.3728-o", processor="x86_64", leap=00, stratum=2, precision=-23, rootdelay=1.500, rootdisp=2.250, refid=192.0.2.1, reftime=0xeb2b7a1e.1c2c6a00, tc=6, mintc=3, offset=2000.125, frequency=-3.500, sys_jitter=0.250, clk_jitter=0.100, clk_wander=0.020`),
		ntptest.Mode6Fragment(2, 0x9614, 1, 0, true, []byte(peer1)),
		ntptest.Mode6Fragment(2, 0x9614, 1, len(peer1), false, []byte(`unreach=0, hmode=3, pmode=4, hpoll=6, ppoll=6, headway=0, flash=0x0, offset=2000.250, delay=0.300, dispersion=1.200, jitter=0.150`)),
	}
}

func TestPollSynced(t *testing.T) {
	t.Parallel()
	d, err := replayClient(syncedReplies()).Poll(context.Background())
	if err != nil {
		t.Fatalf("Poll: %v", err)
	}
	want := Data{
		System: System{Version: "ntpd 4.2.8p15@1.3728-o", Leap: 0, Stratum: 2, RefID: "192.0.2.1", Offset: -2.000125,
			SysJitter: 0.00025, ClockJitter: 0.0001, ClockWander: 2e-8, Frequency: -3.5e-6, RootDelay: 0.0015, RootDispersion: 0.00225},
		Peers: []Peer{{AssociationID: 1, Address: "192.0.2.1", RefID: "GPS", Selection: "sys.peer", Stratum: 1, Reach: 0xff,
			Poll: 64 * time.Second, Offset: -2.00025, Delay: 0.0003, Jitter: 0.00015, Dispersion: 0.0012}},
	}
	if diff := cmp.Diff(want, d, cmpFloat); diff != "" {
		t.Errorf("(-want +got):\n%s", diff)
	}
	if !d.System.Synchronised() {
		t.Error("not synchronised")
	}
	if got, want := d.System.ErrorBound(), 2.000125+0.00225+0.00075; got-want > 1e-12 || want-got > 1e-12 {
		t.Errorf("ErrorBound = %v, want %v", got, want)
	}
}

var cmpFloat = cmp.Comparer(func(a, b float64) bool { return a-b < 1e-12 && b-a < 1e-12 })

func TestPollErrors(t *testing.T) {
	t.Parallel()
	r := syncedReplies()
	for _, tc := range []struct {
		name    string
		replies [][]byte
		want    string
	}{
		{name: "no answer", want: "ntpd did not answer the association list within 1s"},
		{name: "truncated header", replies: [][]byte{r[0][:8]}, want: "shorter than its 12-octet header"},
		{name: "count beyond the datagram", replies: [][]byte{r[0][:13]}, want: "declares 4 data octets"},
		{name: "error bit", replies: [][]byte{func() []byte { b := append([]byte(nil), r[0]...); b[1] |= 0x40; return b }()}, want: "answered the association list with an error"},
		{name: "a request, not a response", replies: [][]byte{func() []byte { b := append([]byte(nil), r[0]...); b[1] &^= 0x80; return b }()}, want: "not a mode 6 response"},
		{name: "no system variables", replies: [][]byte{r[0], reply(2, 0, 0, false, "")}, want: "no variables in the reply"},
		{name: "unterminated quote", replies: [][]byte{r[0], reply(2, 0, 0, false, `version="ntpd`)}, want: `unterminated quoted value of "version"`},
		{name: "peer missing", replies: r[:2], want: "association 1"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			_, err := replayClient(tc.replies).Poll(context.Background())
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Errorf("error %v, want it to contain %q", err, tc.want)
			}
		})
	}
}

func TestConfigValidate(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct{ name, addr, role, want string }{
		{name: "default", addr: "127.0.0.1:123"},
		{name: "second opinion", addr: "127.0.0.1:123", role: "second_opinion"},
		{name: "bad role", addr: "127.0.0.1:123", role: "judge", want: `ntpd.role: must be "authoritative" or "second_opinion", got "judge"`},
		{name: "ipv6", addr: "[::1]:123"},
		{name: "localhost", addr: "localhost:123"},
		{name: "remote", addr: "192.0.2.1:123", want: `ntpd.address: must be on loopback (mode 6 is for the local ntpd), got "192.0.2.1:123"`},
		{name: "no port", addr: "127.0.0.1", want: `ntpd.address: must be "auto" or host:port, got "127.0.0.1"`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			c := DefaultConfig()
			c.Address = tc.addr
			if tc.role != "" {
				c.Role = tc.role
			}
			got := ""
			if err := c.Validate(); err != nil {
				got = err.Error()
			}
			if got != tc.want {
				t.Errorf("Validate() = %q, want %q", got, tc.want)
			}
		})
	}
}

// FuzzPoll feeds arbitrary bytes as one of ntpd's replies: no panic.
func FuzzPoll(f *testing.F) {
	r := syncedReplies()
	for i := range r {
		f.Add(i, r[i])
	}
	f.Fuzz(func(t *testing.T, i int, b []byte) {
		rs := syncedReplies()
		if i < 0 || i >= len(rs) {
			i = 0
		}
		rs[i] = b
		_, _ = replayClient(rs).Poll(context.Background())
	})
}
