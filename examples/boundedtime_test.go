package examples

import (
	"bufio"
	"encoding/binary"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"syscall"
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

// TestCrashTruncatedSegmentPython: the Python reader mapped the segment and
// the VMClock page; a file truncated under the mapping killed it with SIGBUS
// (Python cannot resume after one), and a FIFO in either place hung it
// (issue 32, item 2). It reads with pread now: a truncated segment is an
// error (exit 1), a truncated or unusable device makes the status unknown.
func TestCrashTruncatedSegmentPython(t *testing.T) {
	t.Parallel()
	py := testtool.Require(t, "python3")
	dir := t.TempDir()
	path := filepath.Join(dir, "shm0")
	seg, err := clockbound.Create(path, 0o644, -1)
	if err != nil {
		t.Fatal(err)
	}
	defer seg.Close()
	write := func() {
		t.Helper()
		mono, err := clockbound.SysClock{}.MonotonicCoarse()
		if err != nil {
			t.Fatal(err)
		}
		if err := seg.Write(clockbound.Record{AsOf: mono, VoidAfter: mono + clockbound.VoidAfter, Bound: time.Millisecond, MaxDriftPPB: 15_000,
			Status: boundedtime.StatusSynchronized, DisruptionMarker: 2, DisruptionSupport: true}); err != nil {
			t.Fatal(err)
		}
	}
	file := func(name string, b []byte) string {
		p := filepath.Join(dir, name)
		if err := os.WriteFile(p, b, 0o644); err != nil {
			t.Fatal(err)
		}
		return p
	}
	fifo := filepath.Join(dir, "fifo")
	if err := syscall.Mkfifo(fifo, 0o600); err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		name, device string
		truncate     bool // the device, after the first line
	}{
		{"0 bytes", file("empty", nil), false},
		{"60 bytes", file("short", vmclockPage(2)[:60]), false},
		{"FIFO", fifo, false},
		{"truncated while read", file("page", vmclockPage(2)), true},
	} {
		write() // fresh: a loaded machine starts Python in seconds
		p := startPython(t, py, path, "--vmclock", tc.device, "--watch", "1")
		var statuses []string
		for p.out.Scan() {
			m := pyLine.FindStringSubmatch(p.out.Text())
			if m == nil {
				t.Errorf("%s: %q", tc.name, p.out.Text())
				continue
			}
			statuses = append(statuses, m[1])
			if tc.truncate && len(statuses) == 1 {
				if err := os.Truncate(tc.device, 0); err != nil {
					t.Fatal(err)
				}
			}
		}
		if err := p.wait(); err != nil {
			t.Errorf("%s: %v: %s", tc.name, err, p.stderr.String())
		}
		if tc.truncate {
			if len(statuses) == 0 || statuses[0] != "synchronized" && statuses[0] != "free_running" {
				t.Errorf("%s: first status %v, want a trusted one before the truncation", tc.name, statuses)
			}
			statuses = statuses[1:]
		}
		if len(statuses) == 0 || slices.ContainsFunc(statuses, func(s string) bool { return s != "unknown" }) {
			t.Errorf("%s: statuses %v, want unknown", tc.name, statuses)
		}
	}

	// The segment truncated while the reader runs: an error, exit 1.
	write()
	p := startPython(t, py, path, "--vmclock", filepath.Join(dir, "empty"), "--watch", "5")
	if !p.out.Scan() {
		t.Fatalf("no first line: %s", p.stderr.String())
	}
	if err := os.Truncate(path, 0); err != nil {
		t.Fatal(err)
	}
	for p.out.Scan() {
	}
	err = p.wait()
	var ee *exec.ExitError
	if !errors.As(err, &ee) || ee.ExitCode() != 1 || !strings.Contains(p.stderr.String(), "truncated under the reader") {
		t.Errorf("after truncating the segment: %v, stderr %q; want exit 1 saying it was truncated", err, p.stderr.String())
	}
	// A FIFO as the segment is refused, not waited on.
	p = startPython(t, py, fifo)
	for p.out.Scan() {
	}
	if err := p.wait(); err == nil || !strings.Contains(p.stderr.String(), "not a regular file") {
		t.Errorf("a FIFO as the segment: %v, %q; want refused", err, p.stderr.String())
	}
}

type python struct {
	cmd    *exec.Cmd
	out    *bufio.Scanner
	stderr *strings.Builder
	killed *time.Timer
}

// startPython runs the Python reader with args; it is killed after 20 s,
// which ends its output (a reader stuck on a FIFO does not hang the test).
func startPython(t *testing.T, py string, args ...string) *python {
	t.Helper()
	cmd := exec.Command(py, append([]string{"boundedtime/boundedtime.py"}, args...)...)
	out, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	p := &python{cmd: cmd, out: bufio.NewScanner(out), stderr: &strings.Builder{}}
	cmd.Stderr = p.stderr
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	p.killed = time.AfterFunc(20*time.Second, func() { cmd.Process.Kill() })
	return p
}

// wait waits for the reader's exit; a reader that had to be killed is an
// error that says so.
func (p *python) wait() error {
	err := p.cmd.Wait()
	if !p.killed.Stop() {
		return fmt.Errorf("still running after 20 s: killed (%v)", err)
	}
	return err
}
