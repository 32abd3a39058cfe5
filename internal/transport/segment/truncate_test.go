//go:build linux

package segment

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus/testutil"

	"github.com/clockwatch/clockwatch/internal/clockbound"
	"github.com/clockwatch/clockwatch/internal/timesource"
	"github.com/clockwatch/clockwatch/stepdown/boundedtime"
)

// TestCrashTruncatedSegmentPublisher: the publisher writes a new segment
// when the old one was truncated under it, counts it, and readers that open
// the path read the new one.
func TestCrashTruncatedSegmentPublisher(t *testing.T) {
	t.Parallel()
	path := filepath.Join(t.TempDir(), "shm0")
	seg, err := clockbound.Create(path, 0o644, -1)
	if err != nil {
		t.Fatal(err)
	}
	reading := timesource.Reading{Source: "chrony", Role: timesource.Authoritative, Found: true, Up: true, HasData: true,
		Synchronized: true, ErrorBound: time.Millisecond, LastSuccess: time.Now()}
	p := NewPublisher(clockbound.DefaultConfig(), seg, Options{Readings: func() []timesource.Reading { return []timesource.Reading{reading} }})
	defer p.Close()
	if err := p.Write(); err != nil {
		t.Fatal(err)
	}
	if err := os.Truncate(path, 0); err != nil {
		t.Fatal(err)
	}
	if err := p.Write(); err != nil {
		t.Fatalf("Write after the truncation: %v, want a new segment", err)
	}
	if w := p.Last(); w.Recreated != 1 || w.Writes != 2 {
		t.Errorf("last write %+v, want 2 writes, 1 recreation", w)
	}
	want := "# HELP " + MetricRecreated + " Times the clockbound segment was found truncated, removed or replaced under clockwatch and written anew.\n# TYPE " + MetricRecreated + " counter\n" + MetricRecreated + " 1\n"
	if err := testutil.CollectAndCompare(p.Collector(), strings.NewReader(want), MetricRecreated); err != nil {
		t.Error(err)
	}
	// Replaced: seen at the periodic rewrite (write(true)), not on the
	// event path.
	if err := os.Remove(path); err != nil {
		t.Fatal(err)
	}
	if err := p.Write(); err != nil || p.Last().Recreated != 1 {
		t.Fatalf("an event's write after the removal: %v, %d recreations; want it written to the old file", err, p.Last().Recreated)
	}
	// The periodic write happens when the figures change (or at the
	// interval): chronyd's next poll.
	reading.ErrorBound = 2 * time.Millisecond
	if err := p.write(true, p.cfg.Interval); err != nil || p.Last().Recreated != 2 {
		t.Fatalf("the periodic rewrite after the removal: %v, %d recreations; want a new segment", err, p.Last().Recreated)
	}
	r, err := boundedtime.Open(path)
	if err != nil {
		t.Fatalf("a reader of the new segment: %v", err)
	}
	defer r.Close()
	if _, _, st, err := r.Now(); err != nil || !st.Trusted() {
		t.Errorf("the new segment reads %v, %v; want a trusted status", st, err)
	}
}
