package peers

import (
	"encoding/hex"
	"errors"
	"flag"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/clockwatch/clockwatch/stepdown"
)

var update = flag.Bool("update", false, "rewrite the golden files under testdata/")

// golden compares got with testdata/name (rewritten with -update).
func golden(t *testing.T, name string, got []byte) {
	t.Helper()
	path := filepath.Join("testdata", name)
	if *update {
		if err := os.MkdirAll("testdata", 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(path, got, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	want, err := os.ReadFile(path)
	if err != nil {
		t.Fatalf("%v (run with -update to create it)", err)
	}
	if diff := cmp.Diff(string(want), string(got)); diff != "" {
		t.Errorf("%s (-want +got):\n%s", name, diff)
	}
}

func TestHeaderRoundTrip(t *testing.T) {
	t.Parallel()
	tests := []header{
		{Leap: 0, Version: 4, Mode: modeClient, Transmit: 0x0123456789abcdef},
		{Leap: leapAlarm, Version: 4, Mode: modeServer, Stratum: 16, Poll: 6, Precision: -20, RootDelay: 1, RootDisp: 2,
			RefID: [4]byte{'C', 'W', 'P', 'R'}, RefTime: 3, Origin: 4, Receive: 5, Transmit: 6},
		{Leap: 1, Version: 3, Mode: 1, Stratum: 255, Poll: -7, Precision: 127, RootDelay: 0xffffffff, RootDisp: 0x80000000,
			RefTime: ^uint64(0), Origin: ^uint64(0), Receive: ^uint64(0), Transmit: ^uint64(0)},
	}
	for i, h := range tests {
		b := h.append(nil)
		if len(b) != headerLen {
			t.Fatalf("%d: %d bytes", i, len(b))
		}
		got, err := parseHeader(b)
		if err != nil {
			t.Fatal(err)
		}
		if diff := cmp.Diff(h, got); diff != "" {
			t.Errorf("%d: round trip (-want +got):\n%s", i, diff)
		}
	}
	for _, n := range []int{0, 1, 47} {
		if _, err := parseHeader(make([]byte, n)); !errors.Is(err, errShort) {
			t.Errorf("parseHeader of %d bytes: %v, want errShort", n, err)
		}
	}
}

// TestHeaderBytes: the first byte packs leap, version and mode as RFC 5905
// draws it (a reply to an NTPv4 client: 0xe4 = 11 100 100).
func TestHeaderBytes(t *testing.T) {
	t.Parallel()
	h := header{Leap: leapAlarm, Version: 4, Mode: modeServer, Stratum: stratumUnsynchronized, Precision: precision}
	copy(h.RefID[:], RefID)
	got := hex.EncodeToString(h.append(nil)[:16])
	if want := "e41000ec000000000000000043575052"; got != want {
		t.Errorf("header bytes %s, want %s", got, want)
	}
}

func TestNTPTime(t *testing.T) {
	t.Parallel()
	tests := []struct {
		t    time.Time
		want uint64
	}{
		{time.Unix(-ntpEpochOffset, 0), 0},
		{time.Unix(0, 0), uint64(ntpEpochOffset) << 32},
		{time.Unix(0, 500_000_000), uint64(ntpEpochOffset)<<32 | 1<<31},
		// 2036-02-07T06:28:16Z starts era 1: the seconds wrap to 0.
		{time.Unix(1<<32-ntpEpochOffset, 0), 0},
	}
	for _, tc := range tests {
		if got := ntpTime(tc.t); got != tc.want {
			t.Errorf("ntpTime(%v) = %#x, want %#x", tc.t.UTC(), got, tc.want)
		}
	}
	// timeOf inverts it to the nanosecond's rounding, in the era of near.
	for _, at := range []time.Time{
		time.Date(2026, 12, 3, 1, 2, 3, 123456789, time.UTC),
		time.Date(2036, 2, 7, 6, 28, 15, 999_000_000, time.UTC),
		time.Date(2036, 2, 7, 6, 28, 17, 0, time.UTC),
		time.Date(1999, 12, 31, 23, 59, 59, 0, time.UTC),
	} {
		got := timeOf(ntpTime(at), at.Add(time.Hour))
		if d := got.Sub(at); d < -time.Nanosecond || d > time.Nanosecond {
			t.Errorf("timeOf(ntpTime(%v)) = %v", at, got.UTC())
		}
	}
}

// TestStateField: the state field round-trips, the request's placeholder
// is not a reply's state, and what a peer sends is never trusted beyond
// the field's bounds.
func TestStateField(t *testing.T) {
	t.Parallel()
	hdr := make([]byte, headerLen)
	tests := []struct {
		name string
		in   *State
		want State
		ok   bool
	}{
		{name: "placeholder", in: nil, ok: false},
		{name: "ok", in: &State{State: stepdown.StateOK, Epoch: 7, ErrorBound: 1500 * time.Microsecond, HasErrorBound: true, Agent: 0xfeedface},
			want: State{State: stepdown.StateOK, Epoch: 7, ErrorBound: 1500 * time.Microsecond, HasErrorBound: true, Agent: 0xfeedface}, ok: true},
		{name: "stepdown", in: &State{State: stepdown.StateStepdown, Reason: stepdown.ReasonGrandmasterChanged, Epoch: 1 << 40},
			want: State{State: stepdown.StateStepdown, Reason: stepdown.ReasonGrandmasterChanged, Epoch: 1 << 40}, ok: true},
		{name: "unknown", in: &State{State: stepdown.StateUnknown, Reason: stepdown.ReasonStarting},
			want: State{State: stepdown.StateUnknown, Reason: stepdown.ReasonStarting}, ok: true},
		{name: "reason cut at 32 bytes", in: &State{State: stepdown.StateStepdown, Reason: "a_reason_longer_than_thirty_two_bytes"},
			want: State{State: stepdown.StateStepdown, Reason: "a_reason_longer_than_thirty_two_"}, ok: true},
		{name: "negative bound dropped", in: &State{State: stepdown.StateOK, ErrorBound: -1, HasErrorBound: true},
			want: State{State: stepdown.StateOK}, ok: true},
	}
	for _, tc := range tests {
		b := appendStateField(append([]byte(nil), hdr...), tc.in)
		if len(b) != headerLen+stateFieldLen {
			t.Fatalf("%s: %d bytes", tc.name, len(b))
		}
		got, ok := parseStateField(b)
		if ok != tc.ok {
			t.Errorf("%s: ok %v, want %v", tc.name, ok, tc.ok)
		}
		if diff := cmp.Diff(tc.want, got); diff != "" {
			t.Errorf("%s (-want +got):\n%s", tc.name, diff)
		}
	}
	// A peer's bytes: a state number out of range is unknown, a reason's
	// control characters are dropped, a bound past int64 is no bound.
	b := appendStateField(append([]byte(nil), hdr...), &State{State: stepdown.StateOK})
	f := b[headerLen:]
	f[5] |= flagErrorBound
	f[6] = 9
	copy(f[16:24], []byte{0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff})
	copy(f[32:], "st\nep\x1b[1m")
	got, ok := parseStateField(b)
	if want := (State{State: stepdown.StateUnknown, Reason: "step[1m"}); !ok || got != want {
		t.Errorf("hostile field: %+v %v, want %+v", got, ok, want)
	}
	for _, bad := range [][]byte{b[:headerLen+stateFieldLen-1], append(append([]byte(nil), hdr...), 0xf3, 0x57, 0, 40)} {
		if _, ok := parseStateField(bad); ok {
			t.Errorf("parseStateField(%x) ok", bad[headerLen:])
		}
	}
	golden(t, "state-field.hex", []byte(hex.Dump(appendStateField(nil, &State{State: stepdown.StateStepdown,
		Reason: stepdown.ReasonStep, Epoch: 3, ErrorBound: 2 * time.Millisecond, HasErrorBound: true, Agent: 0x0123456789abcdef}))))
}
