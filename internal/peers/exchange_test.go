package peers

import (
	"context"
	"errors"
	"fmt"
	"net"
	"net/netip"
	"os"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/clockwatch/clockwatch/internal/ntptest"
	"github.com/clockwatch/clockwatch/stepdown"
)

func TestBest(t *testing.T) {
	t.Parallel()
	ms := time.Millisecond
	s := func(off, rtt time.Duration) Sample { return Sample{Offset: off, RTT: rtt} }
	tests := []struct {
		name    string
		samples []Sample
		maxRTT  time.Duration
		want    Sample
		ok      bool
	}{
		{name: "none", maxRTT: ms},
		{name: "least round trip wins", samples: []Sample{s(5*ms, 3*ms), s(1*ms, 1*ms), s(9*ms, 2*ms)}, maxRTT: 10 * ms, want: s(1*ms, 1*ms), ok: true},
		{name: "first of equals", samples: []Sample{s(2*ms, ms), s(3*ms, ms)}, maxRTT: ms, want: s(2*ms, ms), ok: true},
		{name: "all too slow", samples: []Sample{s(0, 11*ms), s(0, 12*ms)}, maxRTT: 10 * ms},
		{name: "slow ones dropped", samples: []Sample{s(0, 11*ms), s(4*ms, 10*ms)}, maxRTT: 10 * ms, want: s(4*ms, 10*ms), ok: true},
		{name: "negative round trip is nonsense", samples: []Sample{s(7*ms, -ms), s(1*ms, 5*ms)}, maxRTT: 10 * ms, want: s(1*ms, 5*ms), ok: true},
	}
	for _, tc := range tests {
		got, ok := Best(tc.samples, tc.maxRTT)
		if ok != tc.ok || got != tc.want {
			t.Errorf("%s: Best = %+v %v, want %+v %v", tc.name, got, ok, tc.want, tc.ok)
		}
	}
}

// shifted is a responder socket whose clock runs off by d: the receive
// timestamps the kernel gives are moved as the transmit ones are.
type shifted struct {
	PacketConn
	d time.Duration
}

func (s shifted) ReadFrom(b []byte) (int, netip.AddrPort, time.Time, error) {
	n, from, rx, err := s.PacketConn.ReadFrom(b)
	return n, from, rx.Add(s.d), err
}

// startResponder runs a responder on loopback with a clock off by shift.
func startResponder(t *testing.T, shift time.Duration, o ResponderOptions) (*Responder, string) {
	t.Helper()
	conn, err := ListenUDP("127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	if shift != 0 {
		conn = shifted{conn, shift}
	}
	if o.Allowed == nil {
		o.Allowed = func(a netip.Addr) bool { return a.IsLoopback() }
	}
	if o.Rate == 0 {
		o.Rate, o.Burst = 1e6, 1e6
	}
	if shift != 0 {
		o.Now = func() time.Time { return time.Now().Add(shift) }
	}
	r := NewResponder(conn, o)
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- r.Run(ctx) }()
	t.Cleanup(func() {
		cancel()
		if err := <-done; err != nil {
			t.Error(err)
		}
	})
	return r, r.Addr().String()
}

func quantile(sorted []time.Duration, q float64) time.Duration {
	return sorted[min(len(sorted)-1, int(q*float64(len(sorted))))]
}

// TestExchangeLoopback: real UDP on loopback, where the true offset is
// zero (or what the responder's clock is shifted by): the measured offsets'
// median and 99th percentile, and the state each reply carries.
func TestExchangeLoopback(t *testing.T) {
	local := State{State: stepdown.StateOK, Epoch: 12, ErrorBound: 800 * time.Microsecond, HasErrorBound: true}
	for _, shift := range []time.Duration{0, 250 * time.Millisecond, -800 * time.Millisecond} {
		_, addr := startResponder(t, shift, ResponderOptions{Local: func() State { return local }})
		const n = 400
		var offs, abs, rtts []time.Duration
		for range n {
			s, err := NTPExchanger{}.Exchange(addr, time.Second, nil)
			if err != nil {
				t.Fatal(err)
			}
			if !s.HasState || s.State != local {
				t.Fatalf("state %+v %v, want %+v", s.State, s.HasState, local)
			}
			offs, abs, rtts = append(offs, s.Offset-shift), append(abs, (s.Offset-shift).Abs()), append(rtts, s.RTT)
		}
		slices.Sort(offs)
		slices.Sort(abs)
		slices.Sort(rtts)
		load, _ := os.ReadFile("/proc/loadavg")
		t.Logf("true offset %v: error median %v, |error| p99 %v, max %v; rtt median %v, p99 %v (%d exchanges; load %s)",
			shift, quantile(offs, 0.5), quantile(abs, 0.99), abs[n-1], quantile(rtts, 0.5), quantile(rtts, 0.99), n, strings.Fields(string(load))[0])
		// Each side takes a kernel timestamp on receive and a user-space
		// one before its send: the asymmetry is the scheduling between
		// them, microseconds; the bound allows a loaded machine.
		if m := quantile(offs, 0.5).Abs(); m > 200*time.Microsecond {
			t.Errorf("true offset %v: median error %v, want within 200µs", shift, m)
		}
		if p := quantile(abs, 0.99); p > 5*time.Millisecond {
			t.Errorf("true offset %v: p99 |error| %v, want within 5ms", shift, p)
		}
	}
}

// TestExchangeAuth: with the same key at both ends the exchange works and
// the reply is checked; a responder that requires a key answers neither a
// request with another key nor an unsigned one (the client times out), and
// says why in its counts.
func TestExchangeAuth(t *testing.T) {
	t.Parallel()
	ks, err := parseKeys(strings.NewReader("1 AES128 HEX:000102030405060708090a0b0c0d0e0f\n2 SHA256 0123456789abcdef0123\n"), "keys")
	if err != nil {
		t.Fatal(err)
	}
	r, addr := startResponder(t, 0, ResponderOptions{Keys: ks})
	for _, id := range []uint32{1, 2} {
		k := ks[id]
		if _, err := (NTPExchanger{}).Exchange(addr, time.Second, &k); err != nil {
			t.Errorf("key %d: %v", id, err)
		}
	}
	wrong := Key{ID: 1, Type: KeyAES128, Bytes: []byte("0123456789abcdef")}
	for _, k := range []*Key{&wrong, nil} {
		_, err := NTPExchanger{}.Exchange(addr, 200*time.Millisecond, k)
		if got := resultOf(err); got != ExchangeTimeout {
			t.Errorf("key %v: %q (%v), want a timeout", k, got, err)
		}
	}
	if c := r.Counts(); c[0] != 2 || c[4] != 2 {
		t.Errorf("counts %v, want 2 answered, 2 unauthenticated", c)
	}
	// A signed request to a responder without keys is answered unsigned:
	// the client refuses the reply.
	_, open := startResponder(t, 0, ResponderOptions{})
	k := ks[1]
	if _, err := (NTPExchanger{}).Exchange(open, time.Second, &k); resultOf(err) != ExchangeUnauthenticated {
		t.Errorf("an unsigned reply: %v", err)
	}
}

// fakePeer answers every request on loopback with what reply makes of it.
func fakePeer(t *testing.T, reply func(req []byte) []byte) string {
	t.Helper()
	c, err := net.ListenPacket("udp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { c.Close() })
	go func() {
		b := make([]byte, 1024)
		for {
			n, from, err := c.ReadFrom(b)
			if err != nil {
				return
			}
			c.WriteTo(reply(b[:n]), from)
		}
	}()
	return c.LocalAddr().String()
}

// TestExchangeRefused: a reply that is not the answer to the request
// (another origin timestamp: spoofed), and a real NTP server's, give no
// sample.
func TestExchangeRefused(t *testing.T) {
	t.Parallel()
	agentReply := func(req []byte, origin func(uint64) uint64) []byte {
		q, _ := parseHeader(req)
		now := ntpTime(time.Now())
		h := header{Leap: leapAlarm, Version: 4, Mode: modeServer, Stratum: 16, Origin: origin(q.Transmit), Receive: now, Transmit: now}
		copy(h.RefID[:], RefID)
		return h.append(nil)
	}
	spoofed := fakePeer(t, func(req []byte) []byte { return agentReply(req, func(tx uint64) uint64 { return tx + 1 }) })
	honest := fakePeer(t, func(req []byte) []byte { return agentReply(req, func(tx uint64) uint64 { return tx }) })
	ntpd, err := ntptest.Start("127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { ntpd.Close() })
	tests := []struct {
		name, addr, want string
		err              error
	}{
		{"spoofed", spoofed, ExchangeSpoofed, ErrSpoofed},
		{"an NTP server", ntpd.Addr().String(), ExchangeNotAgent, ErrNotAgent},
		{"an agent without the state field", honest, ExchangeOK, nil},
	}
	for _, tc := range tests {
		s, err := NTPExchanger{}.Exchange(tc.addr, time.Second, nil)
		if got := resultOf(err); got != tc.want || !errors.Is(err, tc.err) {
			t.Errorf("%s: %q (%v), want %q", tc.name, got, err, tc.want)
		}
		if err == nil && s.HasState {
			t.Errorf("%s: a state from a reply without the field", tc.name)
		}
	}
	if diff := cmp.Diff([]string{"ok", "timeout", "spoofed", "unauthenticated", "not_agent", "rtt_too_large", "error"}, ExchangeResults()); diff != "" {
		t.Error(diff)
	}
}

// script is an Exchanger that answers from a list per address.
type script struct {
	mu   sync.Mutex
	next map[string][]scripted
}

type scripted struct {
	s   Sample
	err error
}

func (sc *script) Exchange(addr string, _ time.Duration, _ *Key) (Sample, error) {
	sc.mu.Lock()
	defer sc.mu.Unlock()
	q := sc.next[addr]
	if len(q) == 0 {
		return Sample{}, errors.New("no more answers")
	}
	sc.next[addr] = q[1:]
	return q[0].s, q[0].err
}

type timeoutErr struct{}

func (timeoutErr) Error() string   { return "i/o timeout" }
func (timeoutErr) Timeout() bool   { return true }
func (timeoutErr) Temporary() bool { return true }

// TestRound: several exchanges a peer, the least round trip kept, the slow
// and the failed ones counted apart, a peer with nothing usable not OK.
func TestRound(t *testing.T) {
	t.Parallel()
	ms := time.Millisecond
	ok := func(off, rtt time.Duration) scripted { return scripted{s: Sample{Offset: off, RTT: rtt}} }
	sc := &script{next: map[string][]scripted{
		"a:1": {ok(3*ms, 2*ms), ok(1*ms, 1*ms), {err: timeoutErr{}}, ok(5*ms, 60*ms)},
		"b:1": {ok(0, 70*ms), ok(0, 80*ms), {err: fmt.Errorf("x: %w", ErrSpoofed)}, {err: timeoutErr{}}},
		"c:1": {{err: timeoutErr{}}, {err: timeoutErr{}}, {err: timeoutErr{}}, {err: timeoutErr{}}},
	}}
	peers := []Peer{{"a", "a:1"}, {"b", "b:1"}, {"c", "c:1"}}
	got := Round(context.Background(), sc, peers, QuerierOptions{Exchanges: 4, Timeout: time.Second, MaxRTT: 50 * ms})
	type summary struct {
		OK        bool
		Offset    time.Duration
		Exchanges map[string]int
		Err       string
	}
	var sums []summary
	for _, r := range got {
		s := summary{OK: r.OK, Offset: r.Best.Offset, Exchanges: r.Exchanges}
		if r.Err != nil {
			s.Err = r.Err.Error()
		}
		sums = append(sums, s)
	}
	want := []summary{
		{OK: true, Offset: ms, Exchanges: map[string]int{"ok": 2, "timeout": 1, "rtt_too_large": 1}},
		{Exchanges: map[string]int{"rtt_too_large": 2, "spoofed": 1, "timeout": 1}, Err: "i/o timeout"},
		{Exchanges: map[string]int{"timeout": 4}, Err: "i/o timeout"},
	}
	if diff := cmp.Diff(want, sums); diff != "" {
		t.Errorf("Round (-want +got):\n%s", diff)
	}
}
