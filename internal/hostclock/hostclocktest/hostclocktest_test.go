package hostclocktest

import (
	"errors"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/clockwatch/clockwatch/internal/kernel"
)

func reads(t *testing.T, c *Clocks, n int) []kernel.Sample {
	t.Helper()
	var out []kernel.Sample
	for range n {
		var s kernel.Sample
		if err := c.ReadClocks(&s); err != nil {
			t.Fatal(err)
		}
		out = append(out, s)
	}
	return out
}

func TestClocks(t *testing.T) {
	t.Parallel()
	sim := &Clocks{Start: kernel.Sample{Mono: 1e9, Boot: 1e9, Real: 1.7e18, Window: 1000}, Windows: []int64{5000, 200}}
	got := reads(t, sim, 2)
	sim.Step(-time.Second)
	got = append(got, reads(t, sim, 1)...)
	want := []kernel.Sample{
		{Mono: 1e9 + 1e6, Boot: 1e9 + 1e6, Real: 1.7e18 + 1e6, Window: 5000},
		{Mono: 1e9 + 2e6, Boot: 1e9 + 2e6, Real: 1.7e18 + 2e6, Window: 200},
		{Mono: 1e9 + 3e6, Boot: 1e9 + 3e6, Real: 1.7e18 + 3e6 - 1e9, Window: 200},
	}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("simulated (-want +got):\n%s", diff)
	}
	if sim.Reads() != 3 || sim.Last() != want[2] {
		t.Errorf("Reads() %d, Last() %+v: want 3 and the last sample", sim.Reads(), sim.Last())
	}

	list := &Clocks{Samples: []kernel.Sample{{Mono: 1}, {Mono: 2}}}
	if got := reads(t, list, 3); got[0].Mono != 1 || got[1].Mono != 2 || got[2].Mono != 2 {
		t.Errorf("samples %+v: want 1, 2, then 2 again", got)
	}

	hostMono := &Clocks{Origin: HostMonotonic, Start: kernel.Sample{Real: 5}}
	if s := reads(t, hostMono, 2); s[1].Mono < s[0].Mono || s[0].Real != s[0].Mono+5 || s[0].Boot != s[0].Mono {
		t.Errorf("host monotonic %+v: want CLOCK_MONOTONIC, REALTIME 5 ns ahead", s)
	}
	h := &Clocks{Origin: Host}
	h.Step(time.Hour)
	//clockwatch:wallclock-ok the test checks a faked REALTIME against the wall clock time.Now reads
	if s := reads(t, h, 1)[0]; time.Duration(s.Real-time.Now().UnixNano()) < 59*time.Minute {
		t.Errorf("host clocks stepped an hour: REALTIME %d, want an hour ahead of now", s.Real)
	}

	var seen []int
	cb := &Clocks{OnRead: func(n int) { seen = append(seen, n) }}
	reads(t, cb, 2)
	cb.SetErr(errors.New("EINVAL"))
	if err := cb.ReadClocks(new(kernel.Sample)); err == nil || cb.Reads() != 2 {
		t.Errorf("SetErr: err %v, %d reads: want the error and no read counted", err, cb.Reads())
	}
	if diff := cmp.Diff([]int{1, 2}, seen); diff != "" {
		t.Errorf("OnRead (-want +got):\n%s", diff)
	}
}

func TestTimex(t *testing.T) {
	t.Parallel()
	tx := Disciplined()
	for range 3 {
		raw, err := tx.ReadTimex()
		if err != nil || !kernel.Decode(raw).Disciplined() {
			t.Fatalf("Disciplined(): %+v, %v", raw, err)
		}
	}
	if tx.Reads() != 3 {
		t.Errorf("Reads() = %d, want 3", tx.Reads())
	}
	if raw, _ := Undisciplined().ReadTimex(); kernel.Decode(raw).Disciplined() {
		t.Errorf("Undisciplined() reads disciplined: %+v", raw)
	}
}
