package segment

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
	"github.com/clockwatch/clockwatch/internal/timesource"
	"github.com/clockwatch/clockwatch/internal/transport/segment/segmenttest"
	"github.com/clockwatch/clockwatch/stepdown"
	"github.com/clockwatch/clockwatch/stepdown/boundedtime"
)

var cbreadLine = regexp.MustCompile(`^status=(\w+) width_ns=(\d+) `)

// TestClockBoundRustReader reads clockwatch's segment with AWS ClockBound's
// own reader, compiled from its source (clock-bound-shm's ShmReader and
// ClockErrorBound::now) by scripts/clockbound-reader/build.sh. Opt-in: the
// source is not on CI's machines, so the test runs when
// CLOCKWATCH_CLOCKBOUND_READER names the built binary; TestClockBoundConformance
// applies the same checks everywhere.
func TestClockBoundRustReader(t *testing.T) {
	bin := os.Getenv("CLOCKWATCH_CLOCKBOUND_READER")
	if bin == "" {
		t.Skip("CLOCKWATCH_CLOCKBOUND_READER is not set (scripts/clockbound-reader/build.sh builds ClockBound's reader)")
	}
	t.Parallel()
	sd, _ := segmenttest.Stepdown(t, 50*time.Millisecond)
	path := filepath.Join(t.TempDir(), "shm0")
	seg, err := clockbound.Create(path, 0o644, -1)
	if err != nil {
		t.Fatal(err)
	}
	defer seg.Close()
	reading := timesource.Reading{Source: "chrony", Role: timesource.Authoritative, Found: true, Up: true, HasData: true,
		Synchronized: true, ErrorBound: 2 * time.Millisecond, LastSuccess: time.Now()}
	cfg := clockbound.DefaultConfig()
	p := NewPublisher(cfg, seg, Options{Announcer: sd, Readings: func() []timesource.Reading { return []timesource.Reading{reading} }})
	read := func() (string, time.Duration) {
		t.Helper()
		out, err := exec.Command(bin, path).CombinedOutput()
		m := cbreadLine.FindStringSubmatch(strings.TrimSpace(string(out)))
		if err != nil || m == nil {
			t.Fatalf("ClockBound's reader: %q, %v", out, err)
		}
		w, _ := strconv.ParseInt(m[2], 10, 64)
		return m[1], time.Duration(w)
	}
	if out, err := exec.Command(bin, path).CombinedOutput(); err == nil || !strings.Contains(string(out), "SegmentNotInitialized") {
		t.Errorf("before the first write ClockBound's reader says %q, %v; want SegmentNotInitialized", out, err)
	}
	for _, step := range []struct {
		name   string
		before func()
		want   string
	}{
		{"synchronised", func() {}, "Synchronized"},
		{"chrony lost", func() { reading.Up = false }, "FreeRunning"},
		{"offset stepdown", func() { reading.Up = true; sd.Reading(chronyOffset(5)) }, "Unknown"},
		{"resumed", func() {
			for sd.Latest().Status.State != stepdown.StateOK {
				sd.Reading(chronyOffset(0))
				time.Sleep(5 * time.Millisecond)
			}
		}, "Synchronized"},
		{"drill of a step", func() {
			if err := sd.Drill(stepdown.ReasonStep, nil, time.Minute); err != nil {
				t.Fatal(err)
			}
		}, "Disrupted"},
	} {
		step.before()
		if err := p.Write(); err != nil {
			t.Fatal(err)
		}
		status, width := read()
		if status != step.want || width < 4*time.Millisecond || width > 5*time.Millisecond {
			t.Errorf("%s: ClockBound's reader says %s, width %v; want %s and 2 x (2 ms + drift)", step.name, status, width, step.want)
		}
	}
	// A segment nobody rewrote for 6 s (clockwatch killed).
	mono, err := clockbound.SysClock{}.MonotonicCoarse()
	if err != nil {
		t.Fatal(err)
	}
	seg.Write(clockbound.Record{AsOf: mono - 6*time.Second, VoidAfter: mono + clockbound.VoidAfter, Bound: 2 * time.Millisecond, MaxDriftPPB: 1_000_000,
		Status: boundedtime.StatusSynchronized})
	if status, width := read(); status != "FreeRunning" || width < 16*time.Millisecond || width > 17*time.Millisecond {
		t.Errorf("stale segment: ClockBound's reader says %s, width %v; want FreeRunning, 2 x (2 ms + 6 s x 1000 ppm)", status, width)
	}
}

// TestClockBoundRustVMClock reads a segment with the VMClock flag through
// ClockBound's own VMClock client (clock-bound-vmclock's VMClock::now, built
// into the same binary): Synchronized while the device's marker is the
// segment's, Unknown once the device has moved on, Disrupted with the new
// marker after the stepdown. Opt-in like TestClockBoundRustReader.
func TestClockBoundRustVMClock(t *testing.T) {
	bin := os.Getenv("CLOCKWATCH_CLOCKBOUND_READER")
	if bin == "" {
		t.Skip("CLOCKWATCH_CLOCKBOUND_READER is not set (scripts/clockbound-reader/build.sh builds ClockBound's reader)")
	}
	t.Parallel()
	sd, _ := segmenttest.Stepdown(t, time.Hour)
	dir := t.TempDir()
	path, dev := filepath.Join(dir, "shm0"), filepath.Join(dir, "vmclock0")
	seg, err := clockbound.Create(path, 0o644, -1)
	if err != nil {
		t.Fatal(err)
	}
	defer seg.Close()
	chronyR := timesource.Reading{Source: "chrony", Role: timesource.Authoritative, Found: true, Up: true, HasData: true,
		Synchronized: true, ErrorBound: 2 * time.Millisecond, LastSuccess: time.Now()}
	p := NewPublisher(clockbound.DefaultConfig(), seg, Options{Announcer: sd, Readings: func() []timesource.Reading { return []timesource.Reading{chronyR} }})
	device := func(marker uint64) {
		b := make([]byte, 4096)
		le := binary.LittleEndian
		le.PutUint32(b[0:], 0x4B4C4356)
		le.PutUint32(b[4:], 4096)
		le.PutUint16(b[8:], 1)
		b[10] = 0xff
		le.PutUint32(b[12:], 2)
		le.PutUint64(b[16:], marker)
		if err := os.WriteFile(dev, b, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	vmclockR := func(marker uint64) timesource.Reading {
		return timesource.Reading{Source: "vmclock", Role: timesource.SecondOpinion, Found: true, Up: true,
			HasDisruptionMarker: true, DisruptionMarker: marker}
	}
	for _, step := range []struct {
		name   string
		before func()
		want   string
	}{
		{"marker 1 on both", func() { device(1); sd.Reading(vmclockR(1)) }, "Synchronized"},
		{"the device moved on", func() { device(2) }, "Unknown"},
		{"the stepdown with marker 2", func() { sd.Reading(vmclockR(2)) }, "Disrupted"},
	} {
		step.before()
		if err := p.Write(); err != nil {
			t.Fatal(err)
		}
		out, err := exec.Command(bin, "--vmclock", dev, path).CombinedOutput()
		m := cbreadLine.FindStringSubmatch(strings.TrimSpace(string(out)))
		if err != nil || m == nil || m[1] != step.want {
			t.Errorf("%s: ClockBound's VMClock client says %q, %v; want %s", step.name, out, err, step.want)
		}
	}
}
