package timesyncd

import (
	"net/netip"
	"testing"
	"time"
)

// t0 is a wall time in microseconds, the shape of timesyncd's timestamps.
const t0 = int64(1_795_000_000_000_000)

func TestMessageArithmetic(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name            string
		m               NTPMessage
		offset, delay   time.Duration
		stepped         bool
		current         time.Duration
		bound           time.Duration // at age 0
		boundAfter1000s time.Duration
	}{
		{
			// The server is 2 ms ahead of us; 10 ms round trip, 2 ms of it
			// inside the server.
			name:   "local behind, slewed",
			m:      NTPMessage{Origin: t0, Receive: t0 + 2000 + 4000, Transmit: t0 + 2000 + 6000, Destination: t0 + 10000, Precision: -20, RootDelay: 4 * time.Millisecond, RootDispersion: time.Millisecond, PacketCount: 5},
			offset: -2 * time.Millisecond, delay: 8 * time.Millisecond,
			current: -2 * time.Millisecond,
			// 2 ms + 4 ms + 2 ms + 1 ms + 2^-20 s (953ns)
			bound:           9*time.Millisecond + 953*time.Nanosecond,
			boundAfter1000s: 24*time.Millisecond + 953*time.Nanosecond,
		},
		{
			name:   "local ahead",
			m:      NTPMessage{Origin: t0, Receive: t0 - 3000 + 500, Transmit: t0 - 3000 + 600, Destination: t0 + 1100, Precision: -10, PacketCount: 1},
			offset: 3 * time.Millisecond, delay: time.Millisecond,
			current:         3 * time.Millisecond,
			bound:           3*time.Millisecond + 500*time.Microsecond + 976562*time.Nanosecond,
			boundAfter1000s: 3*time.Millisecond + 500*time.Microsecond + 976562*time.Nanosecond + 15*time.Millisecond,
		},
		{
			// 12.4 s ahead: timesyncd stepped the clock back at once.
			name:   "stepped",
			m:      NTPMessage{Origin: t0, Receive: t0 - 12_400_000 + 100, Transmit: t0 - 12_400_000 + 100, Destination: t0 + 200, Precision: -30, PacketCount: 2},
			offset: 12400 * time.Millisecond, delay: 200 * time.Microsecond, stepped: true,
			current:         0,
			bound:           100*time.Microsecond + 0,
			boundAfter1000s: 100*time.Microsecond + 15*time.Millisecond,
		},
		{
			// A spike is not applied: the offset stands.
			name:   "spike at 1 s",
			m:      NTPMessage{Origin: t0, Receive: t0 + 1_000_000, Transmit: t0 + 1_000_000, Destination: t0, Spike: true, Precision: -30, PacketCount: 9},
			offset: -time.Second, delay: 0,
			current:         -time.Second,
			bound:           time.Second,
			boundAfter1000s: time.Second + 15*time.Millisecond,
		},
		{
			name:            "just below the step threshold",
			m:               NTPMessage{Origin: t0, Receive: t0 + 399_999, Transmit: t0 + 399_999, Destination: t0, Precision: -30, PacketCount: 3},
			offset:          -399999 * time.Microsecond,
			current:         -399999 * time.Microsecond,
			bound:           399999 * time.Microsecond,
			boundAfter1000s: 399999*time.Microsecond + 15*time.Millisecond,
		},
		{
			// A reordered clock gives a negative delay: it counts as 0.
			name:   "negative delay",
			m:      NTPMessage{Origin: t0, Receive: t0 + 500, Transmit: t0 + 700, Destination: t0 + 100, Precision: -30, PacketCount: 3},
			offset: -550 * time.Microsecond, delay: -100 * time.Microsecond,
			current:         -550 * time.Microsecond,
			bound:           550 * time.Microsecond,
			boundAfter1000s: 550*time.Microsecond + 15*time.Millisecond,
		},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			m := tc.m
			if !m.Valid() {
				t.Fatal("Valid() = false")
			}
			if got := m.Offset(); got != tc.offset {
				t.Errorf("Offset() = %v, want %v", got, tc.offset)
			}
			if got := m.Delay(); got != tc.delay {
				t.Errorf("Delay() = %v, want %v", got, tc.delay)
			}
			if got := m.Stepped(); got != tc.stepped {
				t.Errorf("Stepped() = %v, want %v", got, tc.stepped)
			}
			if got := m.CurrentOffset(); got != tc.current {
				t.Errorf("CurrentOffset() = %v, want %v", got, tc.current)
			}
			if got := m.ErrorBound(0); got != tc.bound {
				t.Errorf("ErrorBound(0) = %v, want %v", got, tc.bound)
			}
			if got := m.ErrorBound(1000 * time.Second); got != tc.boundAfter1000s {
				t.Errorf("ErrorBound(1000s) = %v, want %v", got, tc.boundAfter1000s)
			}
		})
	}
}

func TestMessageValid(t *testing.T) {
	t.Parallel()
	if (NTPMessage{}).Valid() {
		t.Error("the zero message timesyncd publishes before its first reply is valid")
	}
	// What timesyncd publishes before a reply: zeros, but receive and
	// transmit wrapped around from NTP's zero.
	m := NTPMessage{Receive: 1<<63 - 1, Transmit: 1<<63 - 1, Version: 0}
	if m.Valid() {
		t.Error("an empty message with wrapped timestamps is valid")
	}
}

func TestRefID(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		stratum uint32
		id      [4]byte
		want    string
	}{
		{1, [4]byte{'G', 'P', 'S', 0}, "GPS"},
		{1, [4]byte{'P', 'P', 'S', ' '}, "PPS"},
		{0, [4]byte{'R', 'A', 'T', 'E'}, "RATE"},
		{2, [4]byte{192, 0, 2, 1}, "192.0.2.1"},
	} {
		if got := (NTPMessage{Stratum: tc.stratum, RefID: tc.id}).RefIDString(); got != tc.want {
			t.Errorf("RefIDString(stratum %d, %v) = %q, want %q", tc.stratum, tc.id, got, tc.want)
		}
	}
}

func TestPropertiesServerAndStaleness(t *testing.T) {
	t.Parallel()
	a := netip.MustParseAddr("192.0.2.7")
	for _, tc := range []struct {
		p    Properties
		want string
	}{
		{Properties{}, ""},
		{Properties{ServerName: "ntp.example"}, "ntp.example"},
		{Properties{ServerName: "192.0.2.7", ServerAddress: a}, "192.0.2.7"},
		{Properties{ServerAddress: a}, "192.0.2.7"},
		{Properties{ServerName: "ntp.example", ServerAddress: a}, "ntp.example (192.0.2.7)"},
	} {
		if got := tc.p.Server(); got != tc.want {
			t.Errorf("%+v.Server() = %q, want %q", tc.p, got, tc.want)
		}
	}
	if got := (Properties{PollInterval: 64 * time.Second}).StaleAfter(); got != 143*time.Second {
		t.Errorf("StaleAfter at a 64 s poll = %v, want 2×64+15 s", got)
	}
	if got := (Properties{}).StaleAfter(); got != 47*time.Second {
		t.Errorf("StaleAfter without a poll interval = %v, want 2×16+15 s", got)
	}
}
