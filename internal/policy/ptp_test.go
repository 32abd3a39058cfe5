package policy

import (
	"errors"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/clockwatch/clockwatch/internal/timesource"
	"github.com/clockwatch/clockwatch/stepdown"
)

// ptpTriggers are ptp4l's default triggers (probe/ptp.DefaultTriggers),
// written out: the policy's tests know no source package.
func ptpTriggers() SourceTriggers {
	return SourceTriggers{
		Offset:         Threshold{Enabled: true, Threshold: 100 * time.Microsecond},
		ErrorBound:     Threshold{Enabled: true, Threshold: time.Millisecond},
		Unsynchronized: Grace{Enabled: true, Grace: 10 * time.Second},
	}
}

func ptpConfig() Config {
	c := Config{HoldDown: 30 * time.Second, Triggers: DefaultTriggers()}
	c.Triggers.Sources = map[string]SourceTriggers{"ptp4l": ptpTriggers()}
	return c
}

// ptp4l is a reading of an answering ptp4l: port is SLAVE (synchronised),
// UNCALIBRATED (a solution, not synchronised) or LISTENING (none), gm the
// grandmaster it follows (or last followed).
func ptp4l(at float64, port, gm string, offset float64) in {
	r := timesource.Reading{Source: "ptp4l", Found: true, Up: true, Grandmaster: gm,
		Detail: fmt.Sprintf("port %s, grandmaster %s class 6, 1 step, software timestamps", port, gm)}
	if port != "LISTENING" {
		r.HasData, r.Synchronized, r.Offset = true, port == "SLAVE", s(offset)
		r.ErrorBound = s(offset).Abs() + 5*time.Microsecond
	}
	return reading(at, r)
}

func TestPTPTriggers(t *testing.T) {
	t.Parallel()
	gmOff := ptpConfig()
	gmOff.Triggers.GrandmasterChanged.Enabled = false
	ptpOffsetOff := ptpConfig()
	st := ptpOffsetOff.Triggers.Sources["ptp4l"]
	st.Offset.Enabled = false
	ptpOffsetOff.Triggers.Sources["ptp4l"] = st
	const a, b = "001122.fffe.334455", "66778a.fffe.bbccdd"
	absent := reading(0.2, timesource.Reading{Source: "ptp4l", Err: timesource.Absent(errors.New("ptp4l is absent: no /var/run/ptp4l"))})
	for _, tc := range []struct {
		name       string
		cfg        Config
		inputs     []in
		want       []string
		wantDetail string // in the last event's detail
		wantState  stepdown.State
	}{
		{
			name:      "a locked slave within 100 µs: ok",
			cfg:       ptpConfig(),
			inputs:    []in{probeOK(0, "clocks"), ptp4l(1, "SLAVE", a, 40e-6), ptp4l(2, "SLAVE", a, -90e-6), tick(100)},
			want:      []string{"resume/starting@0s"},
			wantState: stepdown.StateOK,
		},
		{
			name:       "an offset over ptp4l's 100 µs steps down (chrony's 1 s would not)",
			cfg:        ptpConfig(),
			inputs:     []in{probeOK(0, "clocks"), ptp4l(1, "SLAVE", a, 40e-6), chrony(1, true, 0.2e-3, 0.3e-3), ptp4l(2, "SLAVE", a, 250e-6), reason(stepdown.ReasonOffset)},
			want:       []string{"resume/starting@0s", "stepdown/offset@2s"},
			wantDetail: "system clock offset 250µs from ptp4l is over 100µs",
			wantState:  stepdown.StateStepdown,
		},
		{
			name:       "the error bound over ptp4l's 1 ms",
			cfg:        ptpConfig(),
			inputs:     []in{probeOK(0, "clocks"), reading(1, timesource.Reading{Source: "ptp4l", Found: true, Up: true, HasData: true, Synchronized: true, Grandmaster: a, ErrorBound: 2 * time.Millisecond})},
			want:       []string{"resume/starting@0s", "stepdown/error_bound@1s"},
			wantDetail: "clock error bound 2ms from ptp4l is over 1ms",
			wantState:  stepdown.StateStepdown,
		},
		{
			name: "port UNCALIBRATED for longer than ptp4l's 10 s grace, not the global 60 s",
			cfg:  ptpConfig(),
			inputs: []in{probeOK(0, "clocks"), ptp4l(1, "SLAVE", a, 0), ptp4l(2, "UNCALIBRATED", a, 3e-6),
				ptp4l(11, "UNCALIBRATED", a, 3e-6), ptp4l(12.5, "UNCALIBRATED", a, 3e-6), reason(stepdown.ReasonUnsynchronized)},
			want:       []string{"resume/starting@0s", "stepdown/unsynchronized@12.5s"},
			wantDetail: "ptp4l reports the clock unsynchronised (port UNCALIBRATED, grandmaster 001122.fffe.334455 class 6, 1 step, software timestamps) for 10.5s",
			wantState:  stepdown.StateStepdown,
		},
		{
			name: "the master lost (LISTENING, no solution) counts as unsynchronised too; found again, a resume after the hold-down",
			cfg:  ptpConfig(),
			inputs: []in{probeOK(0, "clocks"), ptp4l(1, "SLAVE", a, 0), ptp4l(2, "LISTENING", a, 0), ptp4l(13, "LISTENING", a, 0),
				ptp4l(14, "SLAVE", a, 0), ptp4l(43, "SLAVE", a, 0), ptp4l(44, "SLAVE", a, 0)},
			want:      []string{"resume/starting@0s", "stepdown/unsynchronized@13s", "resume/unsynchronized@44s"},
			wantState: stepdown.StateOK,
		},
		{
			name: "another grandmaster: a stepdown at once, like a step, then the hold-down",
			cfg:  ptpConfig(),
			inputs: []in{probeOK(0, "clocks"), ptp4l(1, "SLAVE", a, 0), ptp4l(2, "SLAVE", b, 0), reason(stepdown.ReasonGrandmasterChanged),
				ptp4l(3, "SLAVE", b, 0), ptp4l(31, "SLAVE", b, 0), ptp4l(32, "SLAVE", b, 0)},
			want:       []string{"resume/starting@0s", "stepdown/grandmaster_changed@2s", "resume/grandmaster_changed@32s"},
			wantDetail: "clock healthy for 30s",
			wantState:  stepdown.StateOK,
		},
		{
			name: "the same grandmaster again after losing it is no change; the first one seen neither",
			cfg:  ptpConfig(),
			inputs: []in{probeOK(0, "clocks"), ptp4l(1, "SLAVE", a, 0), ptp4l(2, "LISTENING", a, 0),
				reading(3, timesource.Reading{Source: "ptp4l", Found: true, Up: true}), ptp4l(4, "SLAVE", a, 0), tick(100)},
			want:      []string{"resume/starting@0s"},
			wantState: stepdown.StateOK,
		},
		{
			name:      "grandmaster_changed turned off",
			cfg:       gmOff,
			inputs:    []in{probeOK(0, "clocks"), ptp4l(1, "SLAVE", a, 0), ptp4l(2, "SLAVE", b, 0), tick(100)},
			want:      []string{"resume/starting@0s"},
			wantState: stepdown.StateOK,
		},
		{
			name:       "ptp4l's own offset trigger turned off leaves the others' on",
			cfg:        ptpOffsetOff,
			inputs:     []in{probeOK(0, "clocks"), ptp4l(1, "SLAVE", a, 500e-6), chrony(1, true, 2, 0.01)},
			want:       []string{"resume/starting@0s", "stepdown/offset@1s"},
			wantDetail: "from chrony",
			wantState:  stepdown.StateStepdown,
		},
		{
			name:      "an absent ptp4l raises nothing and is evidence for the start",
			cfg:       ptpConfig(),
			inputs:    []in{probeOK(0, "clocks"), absent, tick(100)},
			want:      []string{"resume/starting@0.2s"},
			wantState: stepdown.StateOK,
		},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			p := New(tc.cfg, 0)
			if strings.HasPrefix(tc.name, "an absent") {
				p.Await("clocks", "ptp4l")
			}
			got := feed(t, p, tc.inputs, tc.want, tc.wantState)
			if tc.wantDetail != "" && len(got) > 0 {
				if last := got[len(got)-1]; !strings.Contains(last.Detail, tc.wantDetail) || (last.Type == stepdown.TypeStepdown && last.Source == "") {
					t.Errorf("last event %+v: want a source and %q in its detail", last, tc.wantDetail)
				}
			}
		})
	}
}

// TestPTPSetConfig: a reload that turns ptp4l's offset trigger off drops
// ptp4l's offset condition, not chrony's.
func TestPTPSetConfig(t *testing.T) {
	t.Parallel()
	p := New(ptpConfig(), 0)
	for _, f := range []in{probeOK(0, "clocks"), ptp4l(1, "SLAVE", "a", 500e-6), chrony(1, true, 2, 0.01)} {
		f(p)
	}
	want := []Condition{{stepdown.ReasonOffset, "chrony"}, {stepdown.ReasonOffset, "ptp4l"}}
	if diff := cmp.Diff(want, p.Conditions()); diff != "" {
		t.Fatalf("conditions (-want +got):\n%s", diff)
	}
	cfg := ptpConfig()
	st := cfg.Triggers.Sources["ptp4l"]
	st.Offset.Enabled = false
	cfg.Triggers.Sources["ptp4l"] = st
	p.SetConfig(cfg)
	if diff := cmp.Diff(want[:1], p.Conditions()); diff != "" {
		t.Errorf("conditions after ptp4l's offset trigger was turned off (-want +got):\n%s", diff)
	}
}

func TestSourceTriggersValidate(t *testing.T) {
	t.Parallel()
	bad := ptpTriggers()
	bad.Unsynchronized.Grace = 0
	if err := bad.Validate("ptp.triggers"); err == nil || !strings.HasPrefix(err.Error(), "ptp.triggers.unsynchronized.grace:") {
		t.Errorf("SourceTriggers.Validate: %v", err)
	}
}
