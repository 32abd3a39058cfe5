package boundedtime

import (
	"encoding/binary"
	"errors"
	"os"
	"path/filepath"
	"testing"
	"time"
)

// seg is a segment's fields, for crafting bytes the way ClockBound's tests
// do (write_memory_segment!).
type seg struct {
	magic0, magic1, size uint32
	version, generation  uint16
	asOf, voidAfter      [2]int64
	bound                int64
	marker               uint64
	drift                uint32
	status               int32
	support              byte
}

func good() seg {
	return seg{magic0: Magic0, magic1: Magic1, size: Size, version: Version, generation: 10,
		asOf: [2]int64{100, 0}, voidAfter: [2]int64{1100, 0}, bound: 10_000, drift: 1000, status: int32(StatusSynchronized)}
}

func (s seg) bytes() []byte {
	b := make([]byte, Size)
	ne := binary.NativeEndian
	ne.PutUint32(b[OffMagic:], s.magic0)
	ne.PutUint32(b[OffMagic+4:], s.magic1)
	ne.PutUint32(b[OffSize:], s.size)
	ne.PutUint16(b[OffVersion:], s.version)
	ne.PutUint16(b[OffGeneration:], s.generation)
	ne.PutUint64(b[OffAsOf:], uint64(s.asOf[0]))
	ne.PutUint64(b[OffAsOf+8:], uint64(s.asOf[1]))
	ne.PutUint64(b[OffVoidAfter:], uint64(s.voidAfter[0]))
	ne.PutUint64(b[OffVoidAfter+8:], uint64(s.voidAfter[1]))
	ne.PutUint64(b[OffBound:], uint64(s.bound))
	ne.PutUint64(b[OffDisruptionMarker:], s.marker)
	ne.PutUint32(b[OffMaxDrift:], s.drift)
	ne.PutUint32(b[OffStatus:], uint32(s.status))
	b[OffDisruptionSupport] = s.support
	return b
}

func writeFile(t testing.TB, b []byte) string {
	t.Helper()
	p := filepath.Join(t.TempDir(), "shm0")
	if err := os.WriteFile(p, b, 0o644); err != nil {
		t.Fatal(err)
	}
	return p
}

// The cases of clock-bound-shm's own tests (shm_header.rs t_shm_header,
// reader.rs t_reader) and a few of this reader's stricter checks.
func TestOpen(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name   string
		modify func(*seg)
		trunc  int
		want   error
	}{
		{name: "valid", modify: func(*seg) {}},
		{name: "bad magic", modify: func(s *seg) { s.magic0, s.magic1 = 0xdeadbeef, 0x0badcafe }, want: ErrNotInitialized},
		{name: "magic in PROTOCOL.md's byte order", modify: func(s *seg) {
			s.magic0, s.magic1 = binary.NativeEndian.Uint32([]byte{0x41, 0x4D, 0x5A, 0x4E}), binary.NativeEndian.Uint32([]byte{0x43, 0x42, 0x02, 0x00})
		}, want: ErrNotInitialized},
		{name: "segsize 4", modify: func(s *seg) { s.size = 4 }, want: ErrMalformed},
		{name: "segsize 16 (header only)", modify: func(s *seg) { s.size = 16 }, want: ErrMalformed},
		{name: "version 0", modify: func(s *seg) { s.version = 0 }, want: ErrNotInitialized},
		{name: "version 9999", modify: func(s *seg) { s.version = 9999 }, want: ErrVersion},
		{name: "version 1", modify: func(s *seg) { s.version = 1 }, want: ErrVersion},
		{name: "generation 0", modify: func(s *seg) { s.generation = 0 }, want: ErrNotInitialized},
		{name: "short file", modify: func(*seg) {}, trunc: 40, want: ErrNotInitialized},
		{name: "empty file", modify: func(*seg) {}, trunc: 1, want: ErrNotInitialized},
		{name: "odd generation at open: no snapshot yet", modify: func(s *seg) { s.generation = 11 }, want: ErrNotInitialized},
		{name: "nanoseconds out of range", modify: func(s *seg) { s.asOf[1] = 1e9 }, want: ErrMalformed},
		{name: "negative seconds", modify: func(s *seg) { s.voidAfter[0] = -1 }, want: ErrMalformed},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			s := good()
			tc.modify(&s)
			b := s.bytes()
			if tc.trunc > 0 {
				b = b[:tc.trunc-1]
			}
			r, err := Open(writeFile(t, b))
			if !errors.Is(err, tc.want) || (tc.want == nil) != (err == nil) {
				t.Fatalf("Open() error = %v, want %v", err, tc.want)
			}
			if r != nil {
				r.Close()
			}
		})
	}
}

func TestOpenMissing(t *testing.T) {
	t.Parallel()
	_, err := Open(filepath.Join(t.TempDir(), "nothing"))
	if !errors.Is(err, os.ErrNotExist) {
		t.Errorf("Open(missing) = %v, want ErrNotExist", err)
	}
}

// The cases of clock-bound-shm's lib.rs t_lib (compute_bound_at), with the
// same numbers: bound 10 µs, drift 1000 ppb.
func TestAt(t *testing.T) {
	t.Parallel()
	sec := func(s int64) time.Duration { return time.Duration(s) * time.Second }
	tests := []struct {
		name            string
		asOf, voidAfter time.Duration
		real            int64
		mono            time.Duration
		drift           uint32
		status          Status
		support         bool
		wantBound       time.Duration
		wantStatus      Status
		wantErr         error
	}{
		{name: "compute_bound_ok", asOf: 0, voidAfter: sec(10), real: 2, mono: sec(2), wantBound: 12 * time.Microsecond, wantStatus: StatusSynchronized},
		{name: "compute_bound_ok_when_real_ahead", asOf: 0, voidAfter: sec(10), real: 20, mono: sec(4), wantBound: 14 * time.Microsecond, wantStatus: StatusSynchronized},
		{name: "compute_bound_force_free_running_status", asOf: 0, voidAfter: sec(100), real: 8, mono: sec(8), wantBound: 18 * time.Microsecond, wantStatus: StatusFreeRunning},
		{name: "compute_bound_unknown_status_if_expired", asOf: 0, voidAfter: sec(5), real: 10, mono: sec(10), wantBound: 20 * time.Microsecond, wantStatus: StatusUnknown},
		{name: "compute_bound_bad_drift", asOf: 0, voidAfter: sec(10), real: 5, mono: sec(5), drift: 2_000_000_000, wantErr: ErrMalformed},
		{name: "compute_bound_causality_break", asOf: sec(5), voidAfter: sec(10), real: 1, mono: sec(1), wantErr: ErrCausality},
		{name: "within the 1 µs blur", asOf: sec(5), voidAfter: sec(10), real: 5, mono: sec(5) - 999, wantBound: 10 * time.Microsecond, wantStatus: StatusSynchronized},
		{name: "just past the blur", asOf: sec(5), voidAfter: sec(10), real: 5, mono: sec(5) - 1000, wantErr: ErrCausality},
		{name: "disrupted stays disrupted", asOf: 0, voidAfter: sec(10), real: 1, mono: sec(1), status: StatusDisrupted, wantBound: 11 * time.Microsecond, wantStatus: StatusDisrupted},
		{name: "unknown stays unknown", asOf: 0, voidAfter: sec(10), real: 1, mono: sec(1), status: StatusUnknown, wantBound: 11 * time.Microsecond, wantStatus: StatusUnknown},
		{name: "free running within grace", asOf: 0, voidAfter: sec(10), real: 1, mono: sec(1), status: StatusFreeRunning, wantBound: 11 * time.Microsecond, wantStatus: StatusFreeRunning},
		{name: "VMClock flag: unknown without the device", asOf: 0, voidAfter: sec(10), real: 1, mono: sec(1), support: true, wantBound: 11 * time.Microsecond, wantStatus: StatusUnknown},
		{name: "invalid status", asOf: 0, voidAfter: sec(10), real: 1, mono: sec(1), status: 7, wantErr: ErrMalformed},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			drift := tc.drift
			if drift == 0 {
				drift = 1000
			}
			status := tc.status
			if status == 0 && tc.name != "unknown stays unknown" {
				status = StatusSynchronized
			}
			s := Snapshot{AsOf: tc.asOf, VoidAfter: tc.voidAfter, Bound: 10 * time.Microsecond, MaxDriftPPB: drift, Status: status, DisruptionSupport: tc.support}
			real := time.Unix(tc.real, 0)
			e, l, st, err := s.At(real, tc.mono)
			if !errors.Is(err, tc.wantErr) || (tc.wantErr == nil) != (err == nil) {
				t.Fatalf("At() error = %v, want %v", err, tc.wantErr)
			}
			if err != nil {
				return
			}
			if got := real.Sub(e); got != tc.wantBound {
				t.Errorf("real - earliest = %v, want %v", got, tc.wantBound)
			}
			if got := l.Sub(real); got != tc.wantBound {
				t.Errorf("latest - real = %v, want %v", got, tc.wantBound)
			}
			if st != tc.wantStatus {
				t.Errorf("status = %v, want %v", st, tc.wantStatus)
			}
		})
	}
}

// A reader over memory the test changes, with a pinned clock.
func memReader(t *testing.T, b []byte) *Reader {
	t.Helper()
	r, err := newReader("mem", b, time.Now(), 200*time.Second)
	if err != nil {
		t.Fatal(err)
	}
	return r
}

func TestSnapshotFallsBackWhileWriting(t *testing.T) {
	t.Parallel()
	s := good()
	b := s.bytes()
	r := memReader(t, b)
	first, err := r.Snapshot()
	if err != nil || first.Bound != 10*time.Microsecond || first.Generation != 10 {
		t.Fatalf("Snapshot() = %+v, %v", first, err)
	}
	// Mid-update (odd generation) and wiped (version or generation 0): the
	// last snapshot, as ClockBound's reader returns.
	for _, mod := range []func(*seg){
		func(s *seg) { s.generation, s.bound = 11, 99 },
		func(s *seg) { s.version, s.bound = 0, 99 },
		func(s *seg) { s.generation, s.bound = 0, 99 },
	} {
		s := good()
		mod(&s)
		copy(b, s.bytes())
		got, err := r.Snapshot()
		if err != nil || got != first {
			t.Errorf("Snapshot() during an update = %+v, %v; want the last one %+v", got, err, first)
		}
	}
	s.generation, s.bound = 12, 20_000
	copy(b, s.bytes())
	if got, err := r.Snapshot(); err != nil || got.Bound != 20*time.Microsecond || got.Generation != 12 {
		t.Errorf("Snapshot() after the update = %+v, %v; want bound 20µs at generation 12", got, err)
	}
	s.version = 3
	copy(b, s.bytes())
	if _, err := r.Snapshot(); !errors.Is(err, ErrVersion) {
		t.Errorf("Snapshot() of version 3 = %v, want ErrVersion", err)
	}
}

func TestNowAgainstTheRealClock(t *testing.T) {
	t.Parallel()
	start := time.Now()
	mono, err := monotonic()
	if err != nil {
		t.Fatal(err)
	}
	s := good()
	s.asOf = [2]int64{int64(mono / time.Second), int64(mono % time.Second)}
	s.voidAfter = [2]int64{s.asOf[0] + 1000, 0}
	s.bound = 1_000_000 // 1 ms
	s.drift = 100_000   // 100 ppm, so the growth is visible
	r, err := Open(writeFile(t, s.bytes()))
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close()
	before := time.Now()
	e, l, st, err := r.Now()
	after := time.Now()
	if err != nil || st != StatusSynchronized && time.Since(start) < RestartGrace {
		t.Fatalf("Now() = %v, %v, %v, %v", e, l, st, err)
	}
	// 1 ms each side, grown by 100 ppm since mono was read (a loaded
	// machine may take a while to get here).
	maxWidth := 2*time.Millisecond + 2*time.Since(start)/10_000 + 10*time.Microsecond
	if e.After(before) || l.Before(after) || l.Sub(e) < 2*time.Millisecond || l.Sub(e) > maxWidth {
		t.Errorf("Now() = [%v, %v] (width %v) around [%v, %v]: want a 2 ms interval containing now", e, l, l.Sub(e), before, after)
	}
	if ok, err := r.SurelyBefore(time.Now().Add(time.Second)); !ok || err != nil {
		t.Errorf("SurelyBefore(now + 1s) = %v, %v; want true", ok, err)
	}
	if ok, err := r.SurelyBefore(time.Now().Add(time.Millisecond / 2)); ok || err != nil {
		t.Errorf("SurelyBefore(now + 0.5ms) = %v, %v; want false: within the bound", ok, err)
	}
	if ok, err := r.SurelyAfter(time.Now().Add(-time.Second)); !ok || err != nil {
		t.Errorf("SurelyAfter(now - 1s) = %v, %v; want true", ok, err)
	}
	// A segment written 6 s ago is stale: free running, bound grown.
	s.asOf[0] -= 6
	r2, err := Open(writeFile(t, s.bytes()))
	if err != nil {
		t.Fatal(err)
	}
	defer r2.Close()
	e, l, st, err = r2.Now()
	if err != nil || st != StatusFreeRunning || l.Sub(e) < 2*(time.Millisecond+600*time.Microsecond) {
		t.Errorf("Now() of a 6 s old segment = width %v, %v, %v; want free running and 1 ms + 6 s x 100 ppm each side", l.Sub(e), st, err)
	}
	// Disrupted: SurelyBefore refuses whatever the deadline.
	s.status = int32(StatusDisrupted)
	r3, err := Open(writeFile(t, s.bytes()))
	if err != nil {
		t.Fatal(err)
	}
	defer r3.Close()
	if ok, err := r3.SurelyBefore(time.Now().Add(time.Hour)); ok || !IsUntrusted(err) {
		t.Errorf("SurelyBefore() while disrupted = %v, %v; want false with an UntrustedError", ok, err)
	}
}

func TestStatusString(t *testing.T) {
	t.Parallel()
	for s, want := range map[Status]string{0: "unknown", 1: "synchronized", 2: "free_running", 3: "disrupted", 9: "invalid"} {
		if s.String() != want {
			t.Errorf("Status(%d).String() = %q, want %q", s, s.String(), want)
		}
	}
}
