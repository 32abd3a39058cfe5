package clockbound

import (
	"encoding/binary"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"testing"
	"time"

	"golang.org/x/sys/unix"

	"github.com/clockwatch/clockwatch/internal/clockbound/clockboundtest"
	"github.com/clockwatch/clockwatch/internal/timesource"
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
func clockBoundNow(path string, real, mono int64) (earliest, latest int64, status int32, err error) {
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
	// client opens /dev/vmclock0 and compares disruption markers.
	if c.disruptionSupport != 0 {
		return 0, 0, 0, errors.New("VMClock flag set: ClockBound's client would need /dev/vmclock0")
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
	return real - bound, real + bound, status, nil
}

// clockBoundNowNow runs clockBoundNow with the clocks ClockBound reads:
// CLOCK_REALTIME, then CLOCK_MONOTONIC_COARSE (common.rs).
func clockBoundNowNow(t *testing.T, path string) (width time.Duration, status int32, err error) {
	t.Helper()
	var rt, mt unix.Timespec
	if err := unix.ClockGettime(unix.CLOCK_REALTIME, &rt); err != nil {
		t.Fatal(err)
	}
	if err := unix.ClockGettime(unix.CLOCK_MONOTONIC_COARSE, &mt); err != nil {
		t.Fatal(err)
	}
	e, l, status, err := clockBoundNow(path, rt.Nano(), mt.Nano())
	return time.Duration(l - e), status, err
}

// TestClockBoundConformance writes the segment with the real publisher,
// following a real stepdown server, and reads it after every step with
// ClockBound's own checks.
func TestClockBoundConformance(t *testing.T) {
	t.Parallel()
	t.Logf("checks transcribed from aws/clock-bound %s", clockBoundCommit)
	sd, _ := clockboundtest.Stepdown(t, 50*time.Millisecond)

	path := filepath.Join(t.TempDir(), "clockbound", "shm0")
	seg, err := Create(path, 0o644, -1)
	if err != nil {
		t.Fatal(err)
	}
	if _, _, err := clockBoundNowNow(t, path); !errors.Is(err, errCBNotInitialized) {
		t.Errorf("before the first write ClockBound reads %v, want SegmentNotInitialized", err)
	}
	reading := timesource.Reading{Source: "chrony", Role: timesource.Authoritative, Found: true, Up: true, HasData: true,
		Synchronized: true, ErrorBound: 2 * time.Millisecond, LastSuccess: time.Now()}
	cfg := DefaultConfig()
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
	for deadline := time.Now().Add(10 * time.Second); sd.Status().State != stepdown.StateOK; time.Sleep(5 * time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatal("no resume after the offset stepdown")
		}
		sd.Reading(chronyOffset(0))
	}
	check("resumed", 1, 4*time.Millisecond)
	if err := sd.Drill(stepdown.ReasonStep, nil, time.Millisecond); err != nil {
		t.Fatal(err)
	}
	check("drill of a step", 3, 4*time.Millisecond)
	sd.Suspended(time.Minute)
	check("suspend", 3, 4*time.Millisecond)
}

// chronyOffset is a reading of an answering, synchronised chronyd that
// estimates the clock off by seconds: the stepdown server's offset input.
func chronyOffset(seconds float64) timesource.Reading {
	off := time.Duration(seconds * float64(time.Second))
	return timesource.Reading{Source: "chrony", Found: true, Up: true, HasData: true, Synchronized: true,
		Offset: off, ErrorBound: off.Abs() + time.Millisecond}
}
