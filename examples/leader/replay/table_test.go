package replay

import (
	"bytes"
	"flag"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/clockwatch/clockwatch/examples/leader"
)

var update = flag.Bool("update", false, "rewrite the golden files in testdata/")

func TestFormat(t *testing.T) {
	t.Parallel()
	sc := Scenarios()
	results := []Result{
		{Scenario: sc[0], DoubleLeader: 9900 * time.Millisecond, StaleAttempted: 1980, StaleLanded: 1980, Overwrote: 990,
			EventToStop: 22400 * time.Millisecond, LeaseToD: 12500 * time.Millisecond},
		{Scenario: sc[1], DoubleLeader: 9900 * time.Millisecond, StaleAttempted: 1980, Rejected: 1980,
			EventToStop: 22400 * time.Millisecond, LeaseToD: 12500 * time.Millisecond},
		{Scenario: sc[2], EventToStop: 1200 * time.Microsecond, LeaseToD: 12500 * time.Millisecond},
		{Scenario: sc[3], EventToStop: 900 * time.Microsecond, LeaseToD: 12500 * time.Millisecond},
		{Scenario: sc[4], DoubleLeader: 200 * time.Millisecond, StaleAttempted: 40, StaleLanded: 40, Overwrote: 20,
			EventToStop: 12700 * time.Millisecond, LeaseToD: 12500 * time.Millisecond},
	}
	var buf bytes.Buffer
	if err := Format(&buf, results); err != nil {
		t.Fatal(err)
	}
	golden := filepath.Join("testdata", "table.golden")
	if *update {
		if err := os.WriteFile(golden, buf.Bytes(), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	want, err := os.ReadFile(golden)
	if err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff(string(want), buf.String()); diff != "" {
		t.Errorf("Format mismatch (-want +got):\n%s", diff)
	}
}

func TestOverlap(t *testing.T) {
	t.Parallel()
	t0 := time.Now()
	at := func(s float64) time.Time { return t0.Add(time.Duration(s * float64(time.Second))) }
	tests := []struct {
		name       string
		a0, a1     float64
		b0, b1     float64
		wantSecond float64
	}{
		{name: "disjoint", a0: 0, a1: 1, b0: 2, b1: 3, wantSecond: 0},
		{name: "touching", a0: 0, a1: 1, b0: 1, b1: 3, wantSecond: 0},
		{name: "partial", a0: 0, a1: 2, b0: 1, b1: 3, wantSecond: 1},
		{name: "inside", a0: 0, a1: 5, b0: 1, b1: 3, wantSecond: 2},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			a := termAt(at(tt.a0), at(tt.a1))
			b := termAt(at(tt.b0), at(tt.b1))
			want := time.Duration(tt.wantSecond * float64(time.Second))
			if got := overlap(a, b); got != want {
				t.Errorf("overlap = %s, want %s", got, want)
			}
			if got := overlap(b, a); got != want {
				t.Errorf("overlap reversed = %s, want %s", got, want)
			}
		})
	}
}

func termAt(start, end time.Time) leader.Term { return leader.Term{Start: start, End: end} }

func TestFormatTerms(t *testing.T) {
	t.Parallel()
	fault := time.Date(2026, 11, 30, 3, 12, 0, 0, time.UTC)
	at := func(s float64) time.Time { return fault.Add(time.Duration(s * float64(time.Second))) }
	r := Result{
		Scenario: Scenarios()[0], Fault: fault,
		A: leader.Stats{Node: "A", Attempted: 8, Landed: 8, Terms: []leader.Term{{
			Token: 7, Start: at(-0.4), End: at(27), StartWall: at(-0.4), EndWall: at(14.6),
			EndReason: "lease expired by the node's wall clock",
		}}},
		D: leader.Stats{Node: "D", Attempted: 4, Landed: 4, Terms: []leader.Term{{
			Token: 9, Start: at(15), End: at(28), StartWall: at(15), EndWall: at(28), EndReason: "context canceled",
		}}},
	}
	var buf bytes.Buffer
	if err := FormatTerms(&buf, []Result{r}); err != nil {
		t.Fatal(err)
	}
	want := `naive:
  A token 7 led from -0.400 s to +27.000 s after the fault (its wall clock: 03:11:59.600 to 03:12:14.600): lease expired by the node's wall clock
  A entries attempted 8, landed 8, rejected by the fence 0, failed 0
  D token 9 led from +15.000 s to +28.000 s after the fault (its wall clock: 03:12:15.000 to 03:12:28.000): context canceled
  D entries attempted 4, landed 4, rejected by the fence 0, failed 0
`
	if diff := cmp.Diff(want, buf.String()); diff != "" {
		t.Errorf("FormatTerms mismatch (-want +got):\n%s", diff)
	}
}
