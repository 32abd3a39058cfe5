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
