package policy

import (
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/clockwatch/clockwatch/internal/timesource"
	"github.com/clockwatch/clockwatch/stepdown"
)

// vmclock is a reading of the VMClock source: a second opinion that
// carries the hypervisor's disruption marker and clock status.
func vmclock(at float64, marker uint64, unreliable bool) in {
	return reading(at, timesource.Reading{Source: "vmclock", Role: timesource.SecondOpinion, Found: true, Up: true,
		HasDisruptionMarker: true, DisruptionMarker: marker, ClockUnreliable: unreliable})
}

func TestVMDisruption(t *testing.T) {
	t.Parallel()
	base := Config{HoldDown: 30 * time.Second, Triggers: DefaultTriggers()}
	off := base
	off.Triggers.VMDisruption.Enabled = false
	await := []string{"clocks", "chrony", "vmclock"}
	start := []in{probeOK(0, "clocks"), chrony(0.1, true, 0, 0.01), vmclock(0.2, 1, false)}
	for _, tc := range []struct {
		name      string
		cfg       Config
		inputs    []in
		want      []string
		wantState stepdown.State
	}{
		{
			name:      "the first marker is no disruption",
			cfg:       base,
			inputs:    append(start, vmclock(1, 1, false), tick(100)),
			want:      []string{"resume/starting@0.2s"},
			wantState: stepdown.StateOK,
		},
		{
			name: "a changed marker steps down; the hold-down counts from it and waits for fresh readings",
			cfg:  base,
			inputs: append(start, vmclock(10, 2, false), vmclock(11, 2, false), tick(40.1),
				chrony(41, true, 0, 0.01), vmclock(41.1, 2, false)),
			want:      []string{"resume/starting@0.2s", "stepdown/vm_disruption@10s", "resume/vm_disruption@41s"},
			wantState: stepdown.StateOK,
		},
		{
			name:      "two migrations: two stepdowns, the hold-down from the second",
			cfg:       base,
			inputs:    append(start, vmclock(10, 2, false), vmclock(20, 3, false), chrony(45, true, 0, 0.01), vmclock(45, 3, false), tick(49), tick(50.1), chrony(50.2, true, 0, 0.01), vmclock(50.3, 3, false)),
			want:      []string{"resume/starting@0.2s", "stepdown/vm_disruption@10s", "stepdown/vm_disruption@20s", "resume/vm_disruption@50.1s"},
			wantState: stepdown.StateOK,
		},
		{
			name:      "unreliable holds the state down while it lasts",
			cfg:       base,
			inputs:    append(start, vmclock(5, 1, true), vmclock(60, 1, true), chrony(60, true, 0, 0.01), tick(70), vmclock(80, 1, false), chrony(110, true, 0, 0.01), vmclock(110.1, 1, false)),
			want:      []string{"resume/starting@0.2s", "stepdown/vm_disruption@5s", "resume/vm_disruption@110s"},
			wantState: stepdown.StateOK,
		},
		{
			name:      "unreliable at start: stepdown, never ok",
			cfg:       base,
			inputs:    []in{probeOK(0, "clocks"), chrony(0.1, true, 0, 0.01), vmclock(0.2, 1, true)},
			want:      []string{"stepdown/vm_disruption@0.2s"},
			wantState: stepdown.StateStepdown,
		},
		{
			name:      "disabled: nothing",
			cfg:       off,
			inputs:    append(start, vmclock(10, 2, true), tick(100)),
			want:      []string{"resume/starting@0.2s"},
			wantState: stepdown.StateOK,
		},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			p := New(tc.cfg, 0)
			p.Await(await...)
			feed(t, p, tc.inputs, tc.want, tc.wantState)
		})
	}
}

// The marker is persisted like a step: one that changed while clockwatch
// was not running steps down at the restart, before any ok; one that did
// not change lets the start end in ok. The segment's marker (Status) is the
// one judged in this process only.
func TestVMDisruptionAcrossARestart(t *testing.T) {
	t.Parallel()
	cfg := Config{HoldDown: 30 * time.Second, Triggers: DefaultTriggers()}
	p := New(cfg, 0)
	p.Await("clocks", "chrony", "vmclock")
	for _, f := range []in{probeOK(0, "clocks"), chrony(0.1, true, 0, 0.01), vmclock(0.2, 7, false)} {
		f(p)
	}
	if st := p.Status(); !st.HasDisruptionMarker || st.DisruptionMarker != 7 || st.State != stepdown.StateOK {
		t.Fatalf("Status() = %+v, want ok with marker 7", st)
	}
	ps := p.Persisted()
	if diff := cmp.Diff(Persisted{Known: []string{"chrony"}, Markers: map[string]uint64{"vmclock": 7}}, ps); diff != "" {
		t.Fatalf("Persisted() (-want +got):\n%s", diff)
	}
	for _, tc := range []struct {
		name      string
		marker    uint64
		want      []string
		wantState stepdown.State
	}{
		{"migrated while down", 8, []string{"stepdown/vm_disruption@5.2s"}, stepdown.StateStepdown},
		{"not moved", 7, []string{"resume/starting@5.2s"}, stepdown.StateOK},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			q := New(cfg, 0)
			q.Restore(ps, s(5))
			q.Await("clocks", "chrony", "vmclock")
			if st := q.Status(); st.HasDisruptionMarker {
				t.Errorf("restored Status() = %+v: the segment must not carry a marker no reading of this process showed", st)
			}
			got := feed(t, q, []in{probeOK(5, "clocks"), chrony(5.1, true, 0, 0.01), vmclock(5.2, tc.marker, false)}, tc.want, tc.wantState)
			if tc.marker != 7 && !strings.Contains(got[0].Detail, "marker 8, was 7") || tc.marker != 7 && !strings.Contains(got[0].Detail, "while clockwatch was not running") {
				t.Errorf("detail %q", got[0].Detail)
			}
			if q.Persisted().Markers["vmclock"] != tc.marker {
				t.Errorf("Persisted().Markers = %v, want vmclock %d", q.Persisted().Markers, tc.marker)
			}
		})
	}
}
