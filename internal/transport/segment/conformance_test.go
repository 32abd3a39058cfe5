package segment

import (
	"encoding/binary"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"testing"
	"time"

	"golang.org/x/sys/unix"

	"github.com/clockwatch/clockwatch/internal/clockbound"
	"github.com/clockwatch/clockwatch/internal/timesource"
	"github.com/clockwatch/clockwatch/internal/transport/segment/segmenttest"
	"github.com/clockwatch/clockwatch/stepdown"
)

// clockBoundCommit is the aws/clock-bound commit (v2.0.2) whose
// clock-bound-shm/src/{shm_header.rs,reader.rs,lib.rs} and
// clock-bound-vmclock/src/lib.rs the checks below transcribe, in their order.
// They run everywhere; ClockBound's own Rust reader, built from its source,
// runs in the opt-in TestClockBoundRustReader.
const clockBoundCommit = "239886c754fe162f0aa1400627a1bfc08ac4cd38"

// The ClockBound errors (ShmError).
var (
	errCBNotInitialized = errors.New("SegmentNotInitialized")
	errCBMalformed      = errors.New("SegmentMalformed")
	errCBVersion        = errors.New("SegmentVersionNotSupported")
	errCBCausality      = errors.New("CausalityBreach")
)

// cbBound is ClockBound's ClockErrorBound, decoded with the #[repr(C)]
// layout of lib.rs (libc::timespec is two i64s on x86-64 and arm64).
type cbBound struct {
	asOfSec, asOfNsec, voidSec, voidNsec, boundNsec int64
	disruptionMarker                                uint64
	maxDriftPPB                                     uint32
	clockStatus                                     int32
	disruptionSupport                               uint8
	padding                                         [7]byte
}

// clockBoundNow is VMClock::new and VMClock::now on a fresh reader: every
// check ClockBound's client applies between opening the file and returning
// (earliest, latest, status). Independent of package boundedtime: it decodes
// the file's bytes itself, with the offsets of the Rust structs.
func clockBoundNow(path, vmclockPath string, real, mono int64) (earliest, latest int64, status int32, err error) {
	ne := binary.NativeEndian
	b, err := os.ReadFile(path)
	if err != nil {
		return 0, 0, 0, err
	}
	// shm_header.rs ShmHeader::read: read(2) of size_of::<ShmHeader>() = 16.
	if len(b) < 16 {
		return 0, 0, 0, errCBNotInitialized
	}
	// ShmHeader::is_valid, in order.
	if ne.Uint32(b[0:]) != 0x414D5A4E || ne.Uint32(b[4:]) != 0x43420200 { // SHM_MAGIC
		return 0, 0, 0, errCBNotInitialized
	}
	segsize, version, generation := ne.Uint32(b[8:]), ne.Uint16(b[12:]), ne.Uint16(b[14:])
	if version == 0 { // has_valid_version
		return 0, 0, 0, errCBNotInitialized
	}
	if generation == 0 { // is_initialized
		return 0, 0, 0, errCBNotInitialized
	}
	if version != 2 { // CLOCKBOUND_SHM_SUPPORTED_VERSION
		return 0, 0, 0, errCBVersion
	}
	if segsize < 16 { // is_well_formed
		return 0, 0, 0, errCBMalformed
	}
	// reader.rs ShmReader::new: mmap(segsize), then the size check.
	if segsize < 16+64 {
		return 0, 0, 0, errCBMalformed
	}
	if uint32(len(b)) < segsize {
		return 0, 0, 0, fmt.Errorf("segsize %d but the file has %d bytes: mmap would fault: %w", segsize, len(b), errCBMalformed)
	}
	// reader.rs ShmReader::snapshot with snapshot_gen 0: version 0 or
	// generation 0 or odd returns the default (zeroed) snapshot.
	if generation&1 == 1 {
		return 0, 0, 0, fmt.Errorf("odd generation %d at rest: the writer never finished: %w", generation, errCBNotInitialized)
	}
	c := cbBound{
		asOfSec: int64(ne.Uint64(b[16:])), asOfNsec: int64(ne.Uint64(b[24:])),
		voidSec: int64(ne.Uint64(b[32:])), voidNsec: int64(ne.Uint64(b[40:])),
		boundNsec: int64(ne.Uint64(b[48:])), disruptionMarker: ne.Uint64(b[56:]),
		maxDriftPPB: ne.Uint32(b[64:]), clockStatus: int32(ne.Uint32(b[68:])), disruptionSupport: b[72],
	}
	copy(c.padding[:], b[73:80])
	// Rust reads clock_status as a #[repr(C)] enum and
	// clock_disruption_support_enabled as a bool: any other bit pattern is
	// undefined behaviour there, so a writer must never produce one.
	if c.clockStatus < 0 || c.clockStatus > 3 || c.disruptionSupport > 1 {
		return 0, 0, 0, fmt.Errorf("status %d, VMClock flag %d: %w", c.clockStatus, c.disruptionSupport, errCBMalformed)
	}
	if c.padding != [7]byte{} {
		return 0, 0, 0, fmt.Errorf("padding % x not zero: %w", c.padding, errCBMalformed)
	}
	// clock-bound-vmclock lib.rs VMClock::new: with the flag set, the
	// client opens /dev/vmclock0 (shm_reader.rs VMClockShmReader::new) and
	// VMClock::now compares the disruption markers.
	var deviceMarker uint64
	if c.disruptionSupport != 0 {
		if deviceMarker, err = clockBoundVMClockMarker(vmclockPath); err != nil {
			return 0, 0, 0, err
		}
	}
	// lib.rs compute_bound_at.
	if c.maxDriftPPB >= 1_000_000_000 {
		return 0, 0, 0, errCBMalformed
	}
	asOf := c.asOfSec*1e9 + c.asOfNsec
	voidAfter := c.voidSec*1e9 + c.voidNsec
	status = c.clockStatus
	if status == 1 || status == 2 { // Synchronized | FreeRunning
		switch {
		case mono < asOf+5e9: // CLOCKBOUND_RESTART_GRACE_PERIOD
		case mono < voidAfter:
			status = 2
		default:
			status = 0
		}
	}
	var d int64
	switch {
	case mono >= asOf:
		d = mono - asOf
	case mono > asOf-1000: // causality_blur: TimeSpec::new(0, 1000)
	default:
		return 0, 0, 0, errCBCausality
	}
	bound := c.boundNsec + int64(float64(d)/1e9*float64(c.maxDriftPPB))
	if c.disruptionSupport != 0 && deviceMarker != c.disruptionMarker {
		status = 0 // ClockStatus::Unknown until the daemon has the new marker
	}
	return real - bound, real + bound, status, nil
}

// clockBoundVMClockMarker is clock-bound-vmclock's VMClockShmReader::new and
// snapshot, for the disruption marker: read(2) of the file, a header of 16
// bytes with the magic (shm.rs VMClockShmHeader::is_valid) and version 1, a
// segment of at least the header and the body (104 bytes), seq_count even.
func clockBoundVMClockMarker(path string) (uint64, error) {
	b, err := os.ReadFile(path)
	if err != nil {
		return 0, fmt.Errorf("VMClockShmReader::new: %v: %w", err, errCBNotInitialized)
	}
	le := binary.LittleEndian
	switch {
	case len(b) == 0:
		return 0, errCBNotInitialized
	case len(b) < 16:
		return 0, errCBMalformed
	case le.Uint32(b[0:]) != 0x4B4C4356: // VMCLOCK_SHM_MAGIC
		return 0, errCBNotInitialized
	case le.Uint16(b[8:]) != 1: // VMCLOCK_SUPPORTED_VERSION
		return 0, errCBVersion
	case le.Uint32(b[4:]) < 16+88 || len(b) < 16+88:
		return 0, errCBMalformed
	case le.Uint32(b[12:])&1 == 1:
		return 0, fmt.Errorf("odd seq_count at rest: %w", errCBNotInitialized)
	}
	return le.Uint64(b[16:]), nil
}

// clockBoundNowNow runs clockBoundNow with the clocks ClockBound reads:
// CLOCK_REALTIME, then CLOCK_MONOTONIC_COARSE (common.rs).
func clockBoundNowNow(t *testing.T, path string, vmclockPath ...string) (width time.Duration, status int32, err error) {
	t.Helper()
	var rt, mt unix.Timespec
	if err := unix.ClockGettime(unix.CLOCK_REALTIME, &rt); err != nil {
		t.Fatal(err)
	}
	if err := unix.ClockGettime(unix.CLOCK_MONOTONIC_COARSE, &mt); err != nil {
		t.Fatal(err)
	}
	dev := "/dev/vmclock0"
	if len(vmclockPath) > 0 {
		dev = vmclockPath[0]
	}
	e, l, status, err := clockBoundNow(path, dev, rt.Nano(), mt.Nano())
	return time.Duration(l - e), status, err
}

// TestClockBoundConformance writes the segment with the real publisher,
// following a real announcer (with its stepdown socket), and reads it after every step with
// ClockBound's own checks.
func TestClockBoundConformance(t *testing.T) {
	t.Parallel()
	t.Logf("checks transcribed from aws/clock-bound %s", clockBoundCommit)
	sd, _ := segmenttest.Stepdown(t, 50*time.Millisecond)

	path := filepath.Join(t.TempDir(), "clockbound", "shm0")
	seg, err := clockbound.Create(path, 0o644, -1)
	if err != nil {
		t.Fatal(err)
	}
	if _, _, err := clockBoundNowNow(t, path); !errors.Is(err, errCBNotInitialized) {
		t.Errorf("before the first write ClockBound reads %v, want SegmentNotInitialized", err)
	}
	reading := timesource.Reading{Source: "chrony", Role: timesource.Authoritative, Found: true, Up: true, HasData: true,
		Synchronized: true, ErrorBound: 2 * time.Millisecond, LastSuccess: time.Now()}
	cfg := clockbound.DefaultConfig()
	cfg.Interval = time.Hour // writes only when the test asks
	p := NewPublisher(cfg, seg, Options{Announcer: sd, Readings: func() []timesource.Reading { return []timesource.Reading{reading} }})
	defer seg.Close()

	check := func(what string, wantStatus int32, minWidth time.Duration) {
		t.Helper()
		if err := p.Write(); err != nil {
			t.Fatal(err)
		}
		width, status, err := clockBoundNowNow(t, path)
		if err != nil || status != wantStatus || width < minWidth || width > minWidth+time.Millisecond {
			t.Errorf("%s: ClockBound reads width %v, status %d, err %v; want status %d and width %v", what, width, status, err, wantStatus, minWidth)
		}
	}
	check("ok, chrony synchronised", 1, 4*time.Millisecond)
	reading.Up = false
	check("chrony lost", 2, 4*time.Millisecond)
	reading.Up = true
	sd.Reading(chronyOffset(5)) // a stepdown that is no disruption
	check("offset stepdown", 0, 4*time.Millisecond)
	for deadline := time.Now().Add(10 * time.Second); sd.Latest().Status.State != stepdown.StateOK; time.Sleep(5 * time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatal("no resume after the offset stepdown")
		}
		sd.Reading(chronyOffset(0))
	}
	check("resumed", 1, 4*time.Millisecond)
	// Held for a minute: a hold of 1 ms had ended before the write on a
	// loaded CI machine (status 1).
	if err := sd.Drill(stepdown.ReasonStep, nil, time.Minute); err != nil {
		t.Fatal(err)
	}
	check("drill of a step", 3, 4*time.Millisecond)
	sd.Woke(time.Minute)
	check("suspend", 3, 4*time.Millisecond)
}

// chronyOffset is a reading of an answering, synchronised chronyd that
// estimates the clock off by seconds: the policy's offset input.
func chronyOffset(seconds float64) timesource.Reading {
	off := time.Duration(seconds * float64(time.Second))
	return timesource.Reading{Source: "chrony", Found: true, Up: true, HasData: true, Synchronized: true,
		Offset: off, ErrorBound: off.Abs() + time.Millisecond}
}

// TestClockBoundConformanceVMClock is the VMClock part, ClockBound's own
// case: the segment carries the marker the stepdown state speaks for and
// the VMClock flag; ClockBound's client compares the marker with the
// device's at every read. Before clockwatch has seen a migration the client
// reports Unknown (the device moved on); once the stepdown is announced the
// segment has the new marker and says Disrupted; after the hold-down,
// Synchronized again with the new marker.
func TestClockBoundConformanceVMClock(t *testing.T) {
	t.Parallel()
	sd, _ := segmenttest.Stepdown(t, 50*time.Millisecond)
	dir := t.TempDir()
	path, dev := filepath.Join(dir, "shm0"), filepath.Join(dir, "vmclock0")
	device := func(marker uint64) {
		t.Helper()
		b := make([]byte, 4096)
		le := binary.LittleEndian
		le.PutUint32(b[0:], 0x4B4C4356)
		le.PutUint32(b[4:], 4096)
		le.PutUint16(b[8:], 1)
		b[10] = 0xff
		le.PutUint32(b[12:], uint32(2*marker))
		le.PutUint64(b[16:], marker)
		if err := os.WriteFile(dev, b, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	seg, err := clockbound.Create(path, 0o644, -1)
	if err != nil {
		t.Fatal(err)
	}
	defer seg.Close()
	chronyR := timesource.Reading{Source: "chrony", Role: timesource.Authoritative, Found: true, Up: true, HasData: true,
		Synchronized: true, ErrorBound: 2 * time.Millisecond, LastSuccess: time.Now()}
	vmclockR := func(marker uint64) timesource.Reading {
		return timesource.Reading{Source: "vmclock", Role: timesource.SecondOpinion, Found: true, Up: true,
			HasDisruptionMarker: true, DisruptionMarker: marker}
	}
	cfg := clockbound.DefaultConfig()
	cfg.Interval = time.Hour
	p := NewPublisher(cfg, seg, Options{Announcer: sd, Readings: func() []timesource.Reading { return []timesource.Reading{chronyR} }})
	check := func(what string, wantStatus int32) {
		t.Helper()
		if err := p.Write(); err != nil {
			t.Fatal(err)
		}
		_, status, err := clockBoundNowNow(t, path, dev)
		if err != nil || status != wantStatus {
			t.Errorf("%s: ClockBound reads status %d, %v; want %d", what, status, err, wantStatus)
		}
	}
	// No marker judged yet: no flag, the device is not read.
	device(1)
	check("before the first VMClock reading", 1)
	sd.Reading(vmclockR(1))
	check("marker 1 in the segment and on the device", 1)
	if b, _ := os.ReadFile(path); b[72] != 1 || binary.NativeEndian.Uint64(b[56:]) != 1 {
		t.Errorf("segment: VMClock flag %d, marker %d; want 1 and 1", b[72], binary.NativeEndian.Uint64(b[56:]))
	}
	device(2)
	check("migrated: the device has 2, the segment 1", 0)
	sd.Reading(vmclockR(2))
	if st := sd.Latest().Status; st.State != stepdown.StateStepdown || st.Reason != stepdown.ReasonVMDisruption {
		t.Fatalf("after the new marker the stepdown state is %+v, want stepdown vm_disruption", st)
	}
	check("stepdown announced, marker 2 in the segment", 3)
	for deadline := time.Now().Add(10 * time.Second); sd.Latest().Status.State != stepdown.StateOK; time.Sleep(5 * time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatal("no resume after the VM disruption's hold-down")
		}
		sd.Reading(vmclockR(2))
		sd.Reading(chronyR)
	}
	check("after the hold-down", 1)
	os.Remove(dev)
	if _, _, err := clockBoundNowNow(t, path, dev); !errors.Is(err, errCBNotInitialized) {
		t.Errorf("without the device ClockBound's client fails with %v, want SegmentNotInitialized", err)
	}
}

// TestClockBoundBetweenWrites: the segment is written when its figures
// change, so ClockBound's reader reads it seconds after a write. Read with
// ClockBound's checks at instants after the write, the bound is the one a
// write at that instant would carry (the figures' bound, Judge), the status
// synchronized within ClockBound's 5 s grace (the publisher writes again
// within clockbound.interval, 4 s), free running after it, unknown past
// void_after.
func TestClockBoundBetweenWrites(t *testing.T) {
	t.Parallel()
	path := filepath.Join(t.TempDir(), "shm0")
	seg, err := clockbound.Create(path, 0o644, -1)
	if err != nil {
		t.Fatal(err)
	}
	defer seg.Close()
	clock := &fakeClock{mono: 2000 * time.Second, wall: time.Date(2026, 12, 3, 21, 0, 0, 0, time.UTC)}
	reading := timesource.Reading{Source: "chrony", Role: timesource.Authoritative, Found: true, Up: true, HasData: true,
		Synchronized: true, ErrorBound: time.Millisecond, LastSuccess: clock.wall.Add(-10 * time.Second)}
	cfg := clockbound.DefaultConfig()
	p := NewPublisher(cfg, seg, Options{Clock: clock, Now: func() time.Time { return clock.wall },
		Readings: func() []timesource.Reading { return []timesource.Reading{reading} }})
	if err := p.Write(); err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		after  time.Duration
		status int32
	}{
		{0, 1}, {cfg.Interval, 1}, {5*time.Second - time.Nanosecond, 1}, {5 * time.Second, 2}, {time.Minute, 2},
		{clockbound.VoidAfter - time.Nanosecond, 2}, {clockbound.VoidAfter, 0}, {2 * clockbound.VoidAfter, 0},
	} {
		at := clock.wall.Add(tc.after)
		e, l, status, err := clockBoundNow(path, "/nonexistent", at.UnixNano(), int64(clock.mono+tc.after))
		want := Judge(nil, []timesource.Reading{reading}, at, cfg.MaxDriftPPB).Bound
		if got := time.Duration(l-e) / 2; err != nil || status != tc.status || (got-want).Abs() > changeTolerance {
			t.Errorf("%v after the write ClockBound reads bound %v, status %d, err %v; want %v, status %d", tc.after, got, status, err, want, tc.status)
		}
	}
}
