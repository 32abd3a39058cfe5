package examples

import (
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/clockwatch/clockwatch/internal/clockbound"
	"github.com/clockwatch/clockwatch/internal/testtool"
	"github.com/clockwatch/clockwatch/internal/timesource"
	"github.com/clockwatch/clockwatch/internal/transport/segment"
	"github.com/clockwatch/clockwatch/stepdown/boundedtime"
)

// backdated is CLOCK_MONOTONIC_COARSE read ago in the past: a publisher
// that wrote its segment that long ago.
type backdated struct{ ago time.Duration }

func (b backdated) MonotonicCoarse() (time.Duration, error) {
	m, err := clockbound.SysClock{}.MonotonicCoarse()
	return m - b.ago, err
}

// TestReadersBetweenWrites: the segment is written only when its figures
// change (and at least every clockbound.interval), so readers must grow the
// bound themselves. The real publisher writes a segment as if N seconds ago
// (its as_of and the time of its figures moved back by N), and the Python
// reader and the Go reader, each a reader of its own, read it now: the bound
// they give is the one the figures give now (the source's bound grown by
// the maximum drift since its update, what a rewrite now would write), a
// status older than ClockBound's 5 s grace is free running, and past
// void_after (clockbound.VoidAfter) unknown.
func TestReadersBetweenWrites(t *testing.T) {
	t.Parallel()
	py := testtool.Require(t, "python3")
	const drift = 1_000_000 // 1000 ppm: a second's growth is a millisecond
	// want is the status a reader must give between before and after,
	// for a write at wrote: synchronized within the grace, free running
	// until void_after, unknown after; either one when the read (a
	// Python's start on a loaded machine) straddles the boundary.
	want := func(wrote, before, after time.Time) []string {
		status := func(at time.Time) string {
			switch age := at.Sub(wrote); {
			case age < boundedtime.RestartGrace:
				return "synchronized"
			case age < clockbound.VoidAfter:
				return "free_running"
			}
			return "unknown"
		}
		return []string{status(before), status(after)}
	}
	for _, tc := range []struct{ ago time.Duration }{
		{time.Second}, {30 * time.Second}, {clockbound.VoidAfter - 10*time.Second}, {clockbound.VoidAfter + time.Second},
	} {
		if mono, _ := (clockbound.SysClock{}).MonotonicCoarse(); mono < tc.ago+time.Minute {
			// A machine up for less than ago cannot hold a write that old;
			// void_after is then checked on the record alone (and the
			// readers' handling of it by TestPythonBoundedTime's "void").
			t.Logf("up for %v only: %s after a write not read", mono, tc.ago)
			continue
		}
		path := filepath.Join(t.TempDir(), "shm0")
		seg, err := clockbound.Create(path, 0o644, -1)
		if err != nil {
			t.Fatal(err)
		}
		cfg := clockbound.DefaultConfig()
		cfg.MaxDriftPPB = drift
		// chronyd's last update 2 s before the write, its bound 1 ms then.
		wrote := time.Now().Add(-tc.ago)
		reading := timesource.Reading{Source: "chrony", Role: timesource.Authoritative, Found: true, Up: true, HasData: true,
			Synchronized: true, ErrorBound: time.Millisecond, LastSuccess: wrote.Add(-2 * time.Second)}
		p := segment.NewPublisher(cfg, seg, segment.Options{Clock: backdated{tc.ago}, Now: func() time.Time { return wrote },
			Readings: func() []timesource.Reading { return []timesource.Reading{reading} }})
		if err := p.Write(); err != nil {
			t.Fatal(err)
		}
		if rec := p.Last().Record; rec.VoidAfter-rec.AsOf != clockbound.VoidAfter {
			t.Errorf("void_after %v after as_of, want %v", rec.VoidAfter-rec.AsOf, clockbound.VoidAfter)
		}
		before := time.Now()
		out, err := exec.Command(py, "boundedtime/boundedtime.py", path).CombinedOutput()
		after := time.Now()
		m := pyLine.FindStringSubmatch(strings.TrimSpace(string(out)))
		if err != nil || m == nil {
			t.Fatalf("%s ago: the Python reader: %q, %v", tc.ago, out, err)
		}
		pyBound, _ := strconv.ParseInt(m[4], 10, 64)
		// What a rewrite would say between the two reads of the clock.
		lo := segment.Grow(reading.ErrorBound, before.Sub(reading.LastSuccess), drift)
		hi := segment.Grow(reading.ErrorBound, after.Sub(reading.LastSuccess), drift)
		// CLOCK_MONOTONIC_COARSE's tick, on each side.
		slack := 20 * time.Millisecond * drift / 1e9
		if ws := want(wrote, before, after); !slices.Contains(ws, m[1]) || time.Duration(pyBound) < lo-slack || time.Duration(pyBound) > hi+slack {
			t.Errorf("%s after the write the Python reader says %s, bound %v; want %s and the figures' bound now, %v to %v",
				tc.ago, m[1], time.Duration(pyBound), ws, lo, hi)
		}
		r, err := boundedtime.Open(path)
		if err != nil {
			t.Fatal(err)
		}
		before = time.Now()
		e, l, st, err := r.Now()
		after = time.Now()
		r.Close()
		lo = segment.Grow(reading.ErrorBound, before.Sub(reading.LastSuccess), drift)
		hi = segment.Grow(reading.ErrorBound, after.Sub(reading.LastSuccess), drift)
		if ws, goBound := want(wrote, before, after), l.Sub(e)/2; err != nil || !slices.Contains(ws, st.String()) || goBound < lo-slack || goBound > hi+slack {
			t.Errorf("%s after the write the Go reader says %v, bound %v (%v); want %s and the figures' bound now, %v to %v",
				tc.ago, st, goBound, err, ws, lo, hi)
		}
		t.Logf("%s after the write: Python %s %v, Go %s %v (written: %v)", tc.ago, m[1], time.Duration(pyBound), st, l.Sub(e)/2, p.Last().Bound)
		seg.Close()
	}
}
