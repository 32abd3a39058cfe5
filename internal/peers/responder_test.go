package peers

import (
	"net/netip"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/clockwatch/clockwatch/stepdown"
)

func TestLimiter(t *testing.T) {
	t.Parallel()
	a, b, c := netip.MustParseAddr("10.0.0.1"), netip.MustParseAddr("10.0.0.2"), netip.MustParseAddr("10.0.0.3")
	type step struct {
		at   time.Duration
		src  netip.Addr
		want bool
	}
	tests := []struct {
		name  string
		steps []step
	}{
		{name: "burst then rate", steps: []step{
			{0, a, true}, {0, a, true}, {0, a, true}, {0, a, false},
			{499 * time.Millisecond, a, false}, {500 * time.Millisecond, a, true}, {500 * time.Millisecond, a, false},
			{10 * time.Second, a, true}, {10 * time.Second, a, true}, {10 * time.Second, a, true}, {10 * time.Second, a, false},
		}},
		{name: "sources apart", steps: []step{
			{0, a, true}, {0, a, true}, {0, a, true}, {0, a, false}, {0, b, true},
		}},
		{name: "table full of busy sources refuses a new one", steps: []step{
			{0, a, true}, {0, b, true}, {0, c, false},
			// a and b refilled after 0.5 s: room again.
			{500 * time.Millisecond, c, true},
		}},
	}
	for _, tc := range tests {
		l := newLimiter(2, 3, 2)
		for i, s := range tc.steps {
			if got := l.allow(s.src, s.at); got != s.want {
				t.Errorf("%s: step %d (%v at %v): %v, want %v", tc.name, i, s.src, s.at, got, s.want)
			}
		}
	}
}

// request builds a client request: NTPv4 with transmit timestamp tx, with
// the state field's placeholder when state, signed with k when not nil.
func request(tx uint64, state bool, k *Key) []byte {
	b := header{Version: 4, Mode: modeClient, Poll: 3, Transmit: tx}.append(nil)
	if state {
		b = appendStateField(b, nil)
	}
	if k != nil {
		b = k.appendMAC(b)
	}
	return b
}

// TestHandle: what the responder answers, to whom, and how its replies are
// marked and sized.
func TestHandle(t *testing.T) {
	t.Parallel()
	peer := netip.MustParseAddrPort("192.0.2.7:40000")
	stranger := netip.MustParseAddrPort("198.51.100.1:123")
	keys, err := parseKeys(strings.NewReader("5 AES128 HEX:000102030405060708090a0b0c0d0e0f\n6 SHA256 0123456789abcdef\n"), "keys")
	if err != nil {
		t.Fatal(err)
	}
	k5, k6 := keys[5], keys[6]
	other := Key{ID: 5, Type: KeyAES128, Bytes: []byte("another-16-bytes")}
	local := State{State: stepdown.StateStepdown, Reason: stepdown.ReasonStep, Epoch: 4, ErrorBound: time.Millisecond, HasErrorBound: true}
	rx := time.Date(2026, 12, 3, 10, 0, 0, 0, time.UTC)
	tx := rx.Add(30 * time.Microsecond)
	short := request(1, false, nil)[:47]
	server := request(1, false, nil)
	server[0] = 4<<3 | modeServer
	v5 := request(1, false, nil)
	v5[0] = 5<<3 | modeClient
	tests := []struct {
		name      string
		keys      Keys
		from      netip.AddrPort
		req       []byte
		result    string
		wantState bool
		wantKey   *Key
	}{
		{name: "plain", from: peer, req: request(0xabc, false, nil), result: RequestAnswered},
		{name: "with the state field", from: peer, req: request(0xabc, true, nil), result: RequestAnswered, wantState: true},
		{name: "from outside the allow-list", from: stranger, req: request(0xabc, true, nil), result: RequestNotAllowed},
		{name: "IPv4-mapped source", from: netip.MustParseAddrPort("[::ffff:192.0.2.7]:1"), req: request(1, false, nil), result: RequestAnswered},
		{name: "short", from: peer, req: short, result: RequestMalformed},
		{name: "a server's packet", from: peer, req: server, result: RequestMalformed},
		{name: "version 5", from: peer, req: v5, result: RequestMalformed},
		{name: "unknown field is answered without it", from: peer, req: append(request(1, false, nil), make([]byte, 48)...), result: RequestAnswered},
		{name: "signed AES", keys: keys, from: peer, req: request(7, true, &k5), result: RequestAnswered, wantState: true, wantKey: &k5},
		{name: "signed SHA256 without state", keys: keys, from: peer, req: request(7, false, &k6), result: RequestAnswered, wantKey: &k6},
		{name: "unsigned when keys are required", keys: keys, from: peer, req: request(7, true, nil), result: RequestUnauthenticated},
		{name: "signed with another key of the same id", keys: keys, from: peer, req: request(7, true, &other), result: RequestUnauthenticated},
		{name: "signed, from outside", keys: keys, from: stranger, req: request(7, true, &k5), result: RequestNotAllowed},
		{name: "signed request without keys configured: answered unsigned", from: peer, req: request(7, true, &k5), result: RequestAnswered, wantState: true},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			r := NewResponder(nil, ResponderOptions{Rate: 1, Burst: 10, Keys: tc.keys,
				Allowed: func(a netip.Addr) bool { return a == peer.Addr() },
				Local:   func() State { return local }, Now: func() time.Time { return tx }})
			reply, result := r.handle(tc.req, tc.from, rx, nil)
			if result != tc.result {
				t.Fatalf("result %q, want %q", result, tc.result)
			}
			if result != RequestAnswered {
				if reply != nil {
					t.Fatalf("a reply of %d bytes to a refused request", len(reply))
				}
				return
			}
			if len(reply) > len(tc.req) {
				t.Errorf("reply of %d bytes to a request of %d", len(reply), len(tc.req))
			}
			body := reply
			if tc.wantKey != nil {
				payload, k, ok := Keys{tc.wantKey.ID: *tc.wantKey}.verify(reply)
				if !ok || k.ID != tc.wantKey.ID {
					t.Fatalf("reply not signed with key %d", tc.wantKey.ID)
				}
				body = payload
			}
			h, err := parseHeader(body)
			if err != nil {
				t.Fatal(err)
			}
			q, _ := parseHeader(tc.req)
			want := header{Leap: 3, Version: q.Version, Mode: modeServer, Stratum: 16, Poll: q.Poll, Precision: -20,
				RefID: [4]byte{'C', 'W', 'P', 'R'}, Origin: q.Transmit, Receive: ntpTime(rx), Transmit: ntpTime(tx)}
			if diff := cmp.Diff(want, h); diff != "" {
				t.Errorf("reply header (-want +got):\n%s", diff)
			}
			st, ok := parseStateField(body)
			if ok != tc.wantState {
				t.Fatalf("state field %v, want %v", ok, tc.wantState)
			}
			if ok && st != local {
				t.Errorf("state %+v, want %+v", st, local)
			}
			wantLen := headerLen
			if tc.wantState {
				wantLen += stateFieldLen
			}
			if len(body) != wantLen {
				t.Errorf("reply body %d bytes, want %d", len(body), wantLen)
			}
		})
	}
}

// TestHandleRateLimit: a source past its burst gets nothing until its
// bucket refills; another source is not affected; the counts say so.
func TestHandleRateLimit(t *testing.T) {
	t.Parallel()
	r := NewResponder(nil, ResponderOptions{Rate: 0.001, Burst: 4, Allowed: func(netip.Addr) bool { return true }})
	a, b := netip.MustParseAddrPort("192.0.2.1:1"), netip.MustParseAddrPort("192.0.2.2:1")
	var got []string
	for range 6 {
		_, res := r.handle(request(1, false, nil), a, time.Now(), nil)
		got = append(got, res)
		r.count(res)
	}
	_, res := r.handle(request(1, false, nil), b, time.Now(), nil)
	got = append(got, res)
	r.count(res)
	want := []string{"answered", "answered", "answered", "answered", "rate_limited", "rate_limited", "answered"}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("(-want +got):\n%s", diff)
	}
	if c := r.Counts(); c != [5]uint64{5, 0, 2, 0, 0} {
		t.Errorf("counts %v", c)
	}
}
