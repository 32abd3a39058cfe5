package examples

import (
	"encoding/binary"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/clockwatch/clockwatch/internal/clockbound"
	"github.com/clockwatch/clockwatch/internal/testtool"
	"github.com/clockwatch/clockwatch/stepdown/boundedtime"
)

var pyLine = regexp.MustCompile(`^status=(\w+) earliest_ns=(\d+) latest_ns=(\d+) bound_ns=(\d+) generation=(\d+)$`)

// TestPythonBoundedTime runs the Python reader (boundedtime/boundedtime.py)
// as its own process on segments written by clockwatch's writer.
func TestPythonBoundedTime(t *testing.T) {
	t.Parallel()
	py := testtool.Require(t, "python3")
	path := filepath.Join(t.TempDir(), "shm0")
	seg, err := clockbound.Create(path, 0o644, -1)
	if err != nil {
		t.Fatal(err)
	}
	defer seg.Close()
	dev := filepath.Join(t.TempDir(), "vmclock0")
	read := func() (string, error) {
		out, err := exec.Command(py, "boundedtime/boundedtime.py", path, "--vmclock", dev).CombinedOutput()
		return strings.TrimSpace(string(out)), err
	}
	if out, err := read(); err == nil || !strings.Contains(out, "not initialized") {
		t.Errorf("before the first write: %q, %v; want refused, not initialized", out, err)
	}
	mono, err := clockbound.SysClock{}.MonotonicCoarse()
	if err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		name       string
		rec        clockbound.Record
		wantStatus string
		minBound   time.Duration
		// device is the VMClock device's marker; 0: no device.
		device uint64
	}{
		{name: "synchronized", rec: clockbound.Record{AsOf: mono, VoidAfter: mono + clockbound.VoidAfter, Bound: time.Millisecond,
			MaxDriftPPB: 15_000, Status: boundedtime.StatusSynchronized}, wantStatus: "synchronized", minBound: time.Millisecond},
		{name: "disrupted", rec: clockbound.Record{AsOf: mono, VoidAfter: mono + clockbound.VoidAfter, Bound: time.Millisecond,
			MaxDriftPPB: 15_000, Status: boundedtime.StatusDisrupted}, wantStatus: "disrupted", minBound: time.Millisecond},
		{name: "stale: free running, grown by 6 s of drift", rec: clockbound.Record{AsOf: mono - 6*time.Second, VoidAfter: mono + clockbound.VoidAfter,
			Bound: time.Millisecond, MaxDriftPPB: 1_000_000, Status: boundedtime.StatusSynchronized}, wantStatus: "free_running", minBound: 7 * time.Millisecond},
		{name: "void", rec: clockbound.Record{AsOf: mono - 20*time.Second, VoidAfter: mono - 10*time.Second, Bound: time.Millisecond,
			MaxDriftPPB: 1, Status: boundedtime.StatusSynchronized}, wantStatus: "unknown", minBound: time.Millisecond},
		{name: "VMClock flag, the device's marker", rec: clockbound.Record{AsOf: mono, VoidAfter: mono + clockbound.VoidAfter, Bound: time.Millisecond,
			MaxDriftPPB: 15_000, Status: boundedtime.StatusSynchronized, DisruptionMarker: 2, DisruptionSupport: true},
			device: 2, wantStatus: "synchronized", minBound: time.Millisecond},
		{name: "VMClock flag, the device moved on (migrated)", rec: clockbound.Record{AsOf: mono, VoidAfter: mono + clockbound.VoidAfter, Bound: time.Millisecond,
			MaxDriftPPB: 15_000, Status: boundedtime.StatusSynchronized, DisruptionMarker: 2, DisruptionSupport: true},
			device: 3, wantStatus: "unknown", minBound: time.Millisecond},
		{name: "VMClock flag, no device", rec: clockbound.Record{AsOf: mono, VoidAfter: mono + clockbound.VoidAfter, Bound: time.Millisecond,
			MaxDriftPPB: 15_000, Status: boundedtime.StatusSynchronized, DisruptionMarker: 2, DisruptionSupport: true},
			wantStatus: "unknown", minBound: time.Millisecond},
	} {
		// The records are relative to mono: keep them so on a slow machine.
		monoNow, err := clockbound.SysClock{}.MonotonicCoarse()
		if err != nil {
			t.Fatal(err)
		}
		tc.rec.AsOf += monoNow - mono
		tc.rec.VoidAfter += monoNow - mono
		os.Remove(dev)
		if tc.device != 0 {
			if err := os.WriteFile(dev, vmclockPage(tc.device), 0o644); err != nil {
				t.Fatal(err)
			}
		}
		seg.Write(tc.rec)
		out, err := read()
		m := pyLine.FindStringSubmatch(out)
		if err != nil || m == nil {
			t.Errorf("%s: %q, %v", tc.name, out, err)
			continue
		}
		e, _ := strconv.ParseInt(m[2], 10, 64)
		l, _ := strconv.ParseInt(m[3], 10, 64)
		bound, _ := strconv.ParseInt(m[4], 10, 64)
		now := time.Now().UnixNano()
		if m[1] != tc.wantStatus || time.Duration(bound) < tc.minBound || time.Duration(bound) > tc.minBound+500*time.Millisecond ||
			e > now || l < now-int64(10*time.Second) || l-e != 2*bound {
			t.Errorf("%s: %q; want status %s, bound from %v, an interval around now", tc.name, out, tc.wantStatus, tc.minBound)
		}
		// The Go reader agrees on the status.
		r, err := boundedtime.OpenVMClock(path, dev)
		if err != nil {
			t.Fatal(err)
		}
		if _, _, st, err := r.Now(); err != nil || st.String() != tc.wantStatus {
			t.Errorf("%s: the Go reader says %v, %v", tc.name, st, err)
		}
		r.Close()
	}
	if err := os.WriteFile(path, make([]byte, 80), 0o644); err != nil {
		t.Fatal(err)
	}
	if out, err := read(); err == nil || !strings.Contains(out, "magic") {
		t.Errorf("zeroed segment: %q, %v; want refused for its magic", out, err)
	}
}

// vmclockPage is a VMClock device's page (Linux's vmclock-abi.h, as qemu 10
// fills it) with the given disruption marker.
func vmclockPage(marker uint64) []byte {
	b := make([]byte, 4096)
	le := binary.LittleEndian
	le.PutUint32(b[0:], 0x4b4c4356) // "VCLK"
	le.PutUint32(b[4:], 4096)
	le.PutUint16(b[8:], 1)
	b[10] = 0xff
	le.PutUint32(b[12:], 4) // seq_count
	le.PutUint64(b[16:], marker)
	return b
}
