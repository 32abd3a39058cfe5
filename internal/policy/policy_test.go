package policy

import (
	"errors"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/clockwatch/clockwatch/stepdown"
)

// in is one input of a table: a function of the policy returning its events.
type in func(p *Policy) []Event

func s(d float64) time.Duration { return time.Duration(d * float64(time.Second)) }

func step(at, secs float64) in {
	return func(p *Policy) []Event { return p.Step(Step{Seconds: secs, Mono: s(at), Epoch: 0}) }
}
func stepEpoch(at, secs float64, epoch uint64) in {
	return func(p *Policy) []Event { return p.Step(Step{Seconds: secs, Mono: s(at), Epoch: epoch}) }
}
func offset(at, secs float64) in {
	return func(p *Policy) []Event { return p.Level(stepdown.ReasonOffset, secs, "chrony", s(at)) }
}
func errBound(at, secs float64) in {
	return func(p *Policy) []Event { return p.Level(stepdown.ReasonErrorBound, secs, "chrony", s(at)) }
}
func synced(at float64, ok bool, src string) in {
	return func(p *Policy) []Event { return p.Synchronized(ok, src, s(at)) }
}
func probeOK(at float64, name string) in {
	return func(p *Policy) []Event { return p.ProbeOK(name, s(at)) }
}
func probeFail(at float64, name string) in {
	return func(p *Policy) []Event { return p.ProbeFailed(name, errors.New("boom"), s(at)) }
}
func errBoundFrom(at, secs float64, src string) in {
	return func(p *Policy) []Event { return p.Level(stepdown.ReasonErrorBound, secs, src, s(at)) }
}
func suspend(at, secs float64) in {
	return func(p *Policy) []Event { return p.Woke(s(secs), s(at)) }
}
func tick(at float64) in { return func(p *Policy) []Event { return p.Tick(s(at)) } }
func drill(at, hold float64) in {
	return func(p *Policy) []Event {
		ev, err := p.Drill(stepdown.ReasonStep, stepdown.Float(-12.4), s(hold), s(at))
		if err != nil {
			return []Event{{Type: "refused", Detail: err.Error()}}
		}
		return ev
	}
}

// brief renders events compactly: type/reason@mono[ drill][ epoch=N].
func brief(evs []Event) []string {
	var out []string
	for _, e := range evs {
		if e.Type == "refused" {
			out = append(out, "refused")
			continue
		}
		b := fmt.Sprintf("%s/%s@%gs", e.Type, e.Reason, e.Mono.Seconds())
		if e.Drill {
			b += " drill"
		}
		if e.Epoch != 0 {
			b += fmt.Sprintf(" epoch=%d", e.Epoch)
		}
		out = append(out, b)
	}
	return out
}

func TestPolicy(t *testing.T) {
	t.Parallel()
	base := Config{HoldDown: 30 * time.Second, Triggers: DefaultTriggers()}
	noStep := base
	noStep.Triggers.Step.Enabled = false
	noProbe := base
	noProbe.Triggers.ProbeLost.Enabled = false
	noUnsync := base
	noUnsync.Triggers.Unsynchronized.Enabled = false
	for _, tc := range []struct {
		name      string
		cfg       Config
		inputs    []in
		want      []string
		wantState stepdown.State
	}{
		{
			name:      "starts unknown, ok at first probe",
			cfg:       base,
			inputs:    []in{tick(1), probeOK(2, "clocks"), probeOK(3, "clocks")},
			want:      []string{"resume/starting@2s"},
			wantState: stepdown.StateOK,
		},
		{
			name: "Level of a reason that has no figure (a step, drill, one unknown) judges nothing",
			cfg:  base,
			inputs: []in{probeOK(0, "clocks"),
				func(p *Policy) []Event { return p.Level(stepdown.ReasonStep, 1e9, "chrony", s(1)) },
				func(p *Policy) []Event { return p.Level(stepdown.ReasonDrill, 1e9, "chrony", s(2)) },
				func(p *Policy) []Event { return p.Level("no_such_reason", 1e9, "chrony", s(3)) }},
			want:      []string{"resume/starting@0s"},
			wantState: stepdown.StateOK,
		},
		{
			name:      "step forward over threshold, resume after hold-down",
			cfg:       base,
			inputs:    []in{probeOK(0, "clocks"), step(10, 0.002), tick(39.9), tick(40), tick(41)},
			want:      []string{"resume/starting@0s", "stepdown/step@10s", "resume/step@40s"},
			wantState: stepdown.StateOK,
		},
		{
			name:      "step backwards over threshold",
			cfg:       base,
			inputs:    []in{probeOK(0, "clocks"), step(10, -12.4)},
			want:      []string{"resume/starting@0s", "stepdown/step@10s"},
			wantState: stepdown.StateStepdown,
		},
		{
			name:      "steps at the threshold are ignored",
			cfg:       base,
			inputs:    []in{probeOK(0, "clocks"), step(1, 0.001), step(2, -0.001), step(3, 0.0005)},
			want:      []string{"resume/starting@0s"},
			wantState: stepdown.StateOK,
		},
		{
			name:      "step trigger disabled",
			cfg:       noStep,
			inputs:    []in{probeOK(0, "clocks"), step(1, 100)},
			want:      []string{"resume/starting@0s"},
			wantState: stepdown.StateOK,
		},
		{
			name:      "second step restarts hold-down and is announced",
			cfg:       base,
			inputs:    []in{probeOK(0, "c"), step(10, 1), step(20, -1), tick(45), tick(50)},
			want:      []string{"resume/starting@0s", "stepdown/step@10s", "stepdown/step@20s", "resume/step@50s"},
			wantState: stepdown.StateOK,
		},
		{
			name:      "epoch follows the step detector",
			cfg:       base,
			inputs:    []in{probeOK(0, "c"), stepEpoch(10, 5, 7)},
			want:      []string{"resume/starting@0s", "stepdown/step@10s epoch=7"},
			wantState: stepdown.StateStepdown,
		},
		{
			name: "offset over threshold fires once, hold-down from when it clears",
			cfg:  base,
			inputs: []in{probeOK(0, "c"), offset(1, 0.5), offset(2, -1.5), offset(3, -2), tick(20),
				offset(40, 0.1), tick(69), tick(70)},
			want:      []string{"resume/starting@0s", "stepdown/offset@2s", "resume/offset@70s"},
			wantState: stepdown.StateOK,
		},
		{
			name:      "error bound",
			cfg:       base,
			inputs:    []in{probeOK(0, "c"), errBound(1, 0.2), errBound(2, 1.5), errBound(3, 0.2), tick(33)},
			want:      []string{"resume/starting@0s", "stepdown/error_bound@2s", "resume/error_bound@33s"},
			wantState: stepdown.StateOK,
		},
		{
			name: "error bound per source",
			cfg:  base,
			inputs: []in{probeOK(0, "c"), errBoundFrom(1, 2, "kernel"), errBoundFrom(2, 0.1, "chrony"),
				tick(40), errBoundFrom(41, 0.1, "kernel"), tick(70), tick(71)},
			want:      []string{"resume/starting@0s", "stepdown/error_bound@1s", "resume/error_bound@71s"},
			wantState: stepdown.StateOK,
		},
		{
			name:      "suspend",
			cfg:       base,
			inputs:    []in{probeOK(0, "c"), suspend(5, 0.001), suspend(10, 600), tick(40)},
			want:      []string{"resume/starting@0s", "stepdown/suspend@10s", "resume/suspend@40s"},
			wantState: stepdown.StateOK,
		},
		{
			name: "unsynchronised within grace is fine",
			cfg:  base,
			inputs: []in{probeOK(0, "c"), synced(1, false, "chrony"), tick(61), synced(61, true, "chrony"),
				tick(100)},
			want:      []string{"resume/starting@0s"},
			wantState: stepdown.StateOK,
		},
		{
			name: "unsynchronised beyond grace",
			cfg:  base,
			inputs: []in{probeOK(0, "c"), synced(1, false, "chrony"), synced(30, false, "chrony"), tick(61.5),
				tick(62), synced(70, true, "chrony"), tick(99), tick(100)},
			want:      []string{"resume/starting@0s", "stepdown/unsynchronized@61.5s", "resume/unsynchronized@100s"},
			wantState: stepdown.StateOK,
		},
		{
			name: "each source has its own grace",
			cfg:  base,
			inputs: []in{probeOK(0, "c"), synced(1, false, "chrony"), synced(50, false, "kernel"), tick(62),
				synced(63, true, "chrony"), tick(111)},
			want:      []string{"resume/starting@0s", "stepdown/unsynchronized@62s", "stepdown/unsynchronized@111s"},
			wantState: stepdown.StateStepdown,
		},
		{
			name:      "unsynchronised trigger disabled",
			cfg:       noUnsync,
			inputs:    []in{probeOK(0, "c"), synced(1, false, "chrony"), tick(1000)},
			want:      []string{"resume/starting@0s"},
			wantState: stepdown.StateOK,
		},
		{
			name: "probe lost",
			cfg:  base,
			inputs: []in{probeOK(0, "clocks"), probeFail(1, "chrony"), probeFail(5, "chrony"), tick(11.5),
				probeOK(20, "chrony"), tick(49), tick(50)},
			want:      []string{"resume/starting@0s", "stepdown/probe_lost@11.5s", "resume/probe_lost@50s"},
			wantState: stepdown.StateOK,
		},
		{
			name:      "probe lost disabled",
			cfg:       noProbe,
			inputs:    []in{probeOK(0, "clocks"), probeFail(1, "chrony"), tick(100)},
			want:      []string{"resume/starting@0s"},
			wantState: stepdown.StateOK,
		},
		{
			name:      "trigger while starting goes straight to stepdown",
			cfg:       base,
			inputs:    []in{offset(1, 3), probeOK(2, "c"), tick(31)},
			want:      []string{"stepdown/offset@1s"},
			wantState: stepdown.StateStepdown,
		},
		{
			name:      "drill resumes after its hold",
			cfg:       base,
			inputs:    []in{probeOK(0, "c"), drill(10, 2), tick(11), tick(12)},
			want:      []string{"resume/starting@0s", "stepdown/step@10s drill", "resume/drill@12s drill"},
			wantState: stepdown.StateOK,
		},
		{
			name:      "drill refused unless ok",
			cfg:       base,
			inputs:    []in{drill(0, 1), probeOK(0, "c"), step(1, 1), drill(2, 1)},
			want:      []string{"refused", "resume/starting@0s", "stepdown/step@1s", "refused"},
			wantState: stepdown.StateStepdown,
		},
		{
			name:      "real trigger during a drill wins",
			cfg:       base,
			inputs:    []in{probeOK(0, "c"), drill(10, 2), step(11, 1), tick(12), tick(41)},
			want:      []string{"resume/starting@0s", "stepdown/step@10s drill", "stepdown/step@11s", "resume/step@41s"},
			wantState: stepdown.StateOK,
		},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			p := New(tc.cfg, 0)
			var got []Event
			for _, f := range tc.inputs {
				got = append(got, f(p)...)
			}
			if diff := cmp.Diff(tc.want, brief(got)); diff != "" {
				t.Errorf("events (-want +got):\n%s", diff)
			}
			if st := p.Status().State; st != tc.wantState {
				t.Errorf("final state %s, want %s", st, tc.wantState)
			}
		})
	}
}

func TestTriggersValidate(t *testing.T) {
	t.Parallel()
	tr := DefaultTriggers()
	if err := tr.Validate("stepdown.triggers"); err != nil {
		t.Fatalf("defaults: %v", err)
	}
	tr.Step.Threshold = -time.Millisecond
	tr.ProbeLost.Grace = 0
	tr.Offset = Threshold{Enabled: false} // disabled: no threshold needed
	err := tr.Validate("stepdown.triggers")
	want := "stepdown.triggers.step.threshold: must be positive when enabled, got -1ms\n" +
		"stepdown.triggers.probe_lost.grace: must be positive when enabled, got 0s"
	if err == nil || err.Error() != want {
		t.Fatalf("got %v, want %s", err, want)
	}
	if !strings.Contains(err.Error(), "step.threshold") {
		t.Fatal("field not named")
	}
}

func TestStepEventDetails(t *testing.T) {
	t.Parallel()
	p := New(Config{HoldDown: time.Second, Triggers: DefaultTriggers()}, 3)
	p.ProbeOK("c", 0)
	wb := time.Date(2026, 11, 30, 4, 0, 0, 0, time.UTC)
	ev := p.Step(Step{Seconds: -12.4, Mono: 5 * time.Second, WallBefore: wb, WallAfter: wb.Add(-12400 * time.Millisecond), Epoch: 4, How: SeenClockSet})
	if len(ev) != 1 {
		t.Fatalf("got %d events", len(ev))
	}
	m := ev[0].Message(9)
	want := stepdown.Message{Type: "stepdown", State: "stepdown", Reason: "step", Epoch: 4, Seq: 9,
		StepSeconds: stepdown.Float(-12.4), WallBefore: wb, WallAfter: wb.Add(-12400 * time.Millisecond),
		MonoNanos: int64(5 * time.Second), Source: "clock_set", Detail: "wall clock stepped by -12.4s"}
	if diff := cmp.Diff(want, m); diff != "" {
		t.Errorf("message (-want +got):\n%s", diff)
	}
	// A step made while clockwatch was not running says so.
	ev = p.Step(Step{Seconds: 3600, Mono: 6 * time.Second, Epoch: 5, How: SeenRestart})
	if len(ev) != 1 || ev[0].Source != "restart" || ev[0].Detail != "wall clock stepped by 1h0m0s while clockwatch was not running" {
		t.Errorf("step seen at restart: %+v", ev)
	}
}
