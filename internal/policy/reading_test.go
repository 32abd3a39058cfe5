package policy

import (
	"errors"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/clockwatch/clockwatch/internal/timesource"
	"github.com/clockwatch/clockwatch/stepdown"
)

// chrony is a reading of an answering chronyd.
func chrony(at float64, synced bool, offset, bound float64) in {
	return reading(at, timesource.Reading{Source: "chrony", Found: true, Up: true, HasData: true, Synchronized: synced,
		Offset: s(offset), ErrorBound: s(bound)})
}

// kernel is a reading of the kernel with maxerror bound: disciplined below 16 s.
func kernel(at, maxErr float64) in {
	return reading(at, timesource.Reading{Source: "kernel", Role: timesource.Fallback, Found: true, Up: true,
		HasData: true, Synchronized: maxErr < 16, ErrorBound: s(maxErr)})
}

// chronyR is the reading of an answering chronyd, synchronised or not,
// with that error bound; chronyNotPolled its reading before the poller's
// first answer.
func chronyR(synced bool, bound float64) timesource.Reading {
	return timesource.Reading{Source: "chrony", Role: timesource.Authoritative, Found: true, Up: true, HasData: true,
		Synchronized: synced, ErrorBound: s(bound)}
}

var chronyNotPolled = timesource.Reading{Source: "chrony", Role: timesource.Authoritative}

// kernelR is the kernel's reading with maxerror bound.
func kernelR(maxErr float64) timesource.Reading {
	return timesource.Reading{Source: "kernel", Role: timesource.Fallback, Found: true, Up: true,
		HasData: true, Synchronized: maxErr < 16, ErrorBound: s(maxErr)}
}

// readings feeds one poll of every source, as the daemon's feed does.
func readings(at float64, rs ...timesource.Reading) in {
	return func(p *Policy) []Event {
		set := timesource.Set{}
		for _, r := range rs {
			set[r.Source] = r
		}
		return p.Readings(set, s(at))
	}
}

func reading(at float64, r timesource.Reading) in {
	return func(p *Policy) []Event { return p.Reading(r, s(at)) }
}

func reason(want stepdown.Reason) in {
	return func(p *Policy) []Event {
		if got := p.Status().Reason; got != want {
			return []Event{{Type: "reason " + string(got) + ", want " + string(want)}}
		}
		return nil
	}
}

func TestReadings(t *testing.T) {
	t.Parallel()
	base := Config{HoldDown: 30 * time.Second, Triggers: DefaultTriggers()}
	noBound := base
	noBound.Triggers.ErrorBound.Enabled = false
	noUnsync := base
	noUnsync.Triggers.Unsynchronized.Enabled = false
	chronyAbsent := reading(0.3, timesource.Reading{Source: "chrony", Err: timesource.Absent(errors.New("chronyd is not running"))})
	// A socket that takes the request and never answers: chronyd hung, or
	// not yet up; looked for and there, so never absent.
	chronySilent := func(at float64) in {
		return reading(at, timesource.Reading{Source: "chrony", Err: errors.New("reading chronyd: i/o timeout")})
	}
	chronyLost := func(at float64) in {
		return reading(at, timesource.Reading{Source: "chrony", Found: true, Err: errors.New("gone")})
	}
	chronyPending := reading(0.1, timesource.Reading{Source: "chrony"})
	for _, tc := range []struct {
		name      string
		cfg       Config
		await     []string
		inputs    []in
		want      []string
		wantState stepdown.State
	}{
		{
			name:      "unknown until every awaited source has reported",
			cfg:       base,
			await:     []string{"clocks", "kernel", "chrony"},
			inputs:    []in{probeOK(0, "clocks"), kernel(0.1, 0.01), chronyPending, tick(5), chrony(5.2, true, 0, 0.01)},
			want:      []string{"resume/starting@5.2s"},
			wantState: stepdown.StateOK,
		},
		{
			name:      "a source that fails its first poll is absent: evidence too",
			cfg:       base,
			await:     []string{"clocks", "kernel", "chrony"},
			inputs:    []in{probeOK(0, "clocks"), kernel(0.1, 0.01), chronyAbsent, tick(100)},
			want:      []string{"resume/starting@0.3s"},
			wantState: stepdown.StateOK,
		},
		{
			name:      "a source that never answers is a probe failure at start, never absent",
			cfg:       base,
			await:     []string{"clocks", "kernel", "chrony"},
			inputs:    []in{probeOK(0, "clocks"), kernel(0.1, 0.01), chronySilent(0.3), tick(5), chronySilent(5.3), tick(100)},
			want:      []string{"stepdown/probe_lost@0.3s"},
			wantState: stepdown.StateStepdown,
		},
		{
			name:  "a source that never answered and then does: resume after the hold-down",
			cfg:   base,
			await: []string{"clocks", "kernel", "chrony"},
			inputs: []in{probeOK(0, "clocks"), kernel(0.1, 0.01), chronySilent(0.3), chrony(2, true, 0, 0.01),
				kernel(20, 0.01), chrony(20, true, 0, 0.01), tick(31), tick(33)},
			want:      []string{"stepdown/probe_lost@0.3s", "resume/probe_lost@33s"},
			wantState: stepdown.StateOK,
		},
		{
			name:      "evidence of an offset at start: stepdown, never ok",
			cfg:       base,
			await:     []string{"clocks", "kernel", "chrony"},
			inputs:    []in{probeOK(0, "clocks"), kernel(0.1, 0.01), chrony(0.2, true, 2, 2.01)},
			want:      []string{"stepdown/offset@0.2s", "stepdown/error_bound@0.2s"},
			wantState: stepdown.StateStepdown,
		},
		{
			// chronyd before the first poll of its servers: the start
			// waits for it, no stepdown for a state it leaves at once.
			name:      "unsynchronised at start, then synchronised within the grace: resume, never stepdown",
			cfg:       base,
			await:     []string{"clocks", "kernel", "chrony"},
			inputs:    []in{probeOK(0, "clocks"), chrony(0.1, false, 0, 0.01), kernel(0.1, 16), tick(1), chrony(2, true, 0, 0.01), kernel(2, 16), tick(100)},
			want:      []string{"resume/starting@2s"},
			wantState: stepdown.StateOK,
		},
		{
			name:      "unsynchronised at start for the whole grace: stepdown when it ends",
			cfg:       base,
			await:     []string{"clocks", "chrony"},
			inputs:    []in{chrony(0.1, false, 0, 0.01), probeOK(0.2, "clocks"), tick(30), chrony(30, false, 0, 0.01), tick(60.1), tick(60.2)},
			want:      []string{"stepdown/unsynchronized@60.2s"},
			wantState: stepdown.StateStepdown,
		},
		{
			name:      "unsynchronised at start with the trigger off: no wait",
			cfg:       noUnsync,
			await:     []string{"clocks", "chrony"},
			inputs:    []in{chrony(0.1, false, 0, 0.01), probeOK(0.2, "clocks")},
			want:      []string{"resume/starting@0.2s"},
			wantState: stepdown.StateOK,
		},
		{
			// chronyd -x: the kernel's maxerror stays at 16 s. Before
			// chronyd's poller has its first answer, the kernel is not
			// judged (a false stepdown at every start before the fix).
			name:  "the kernel is not judged before an authoritative source's first poll",
			cfg:   base,
			await: []string{"clocks", "kernel", "chrony"},
			inputs: []in{probeOK(0, "clocks"), readings(0.1, chronyNotPolled, kernelR(16)), readings(0.2, chronyNotPolled, kernelR(16)),
				readings(0.3, chronyR(true, 0.00001), kernelR(16)), tick(100), readings(100, chronyR(true, 0.00001), kernelR(16))},
			want:      []string{"resume/starting@0.3s"},
			wantState: stepdown.StateOK,
		},
		{
			name:  "the kernel is not judged while chronyd answers unsynchronised at start",
			cfg:   base,
			await: []string{"clocks", "kernel", "chrony"},
			inputs: []in{probeOK(0, "clocks"), readings(0.1, chronyNotPolled, kernelR(16)), readings(0.2, chronyR(false, 1.5), kernelR(16)),
				readings(5, chronyR(false, 1.5), kernelR(16)), readings(6, chronyR(true, 0.00001), kernelR(16)), tick(100)},
			want:      []string{"resume/starting@6s"},
			wantState: stepdown.StateOK,
		},
		{
			name:  "chronyd synchronised without rtcsync: STA_UNSYNC never steps down",
			cfg:   noBound,
			await: []string{"clocks", "kernel", "chrony"},
			inputs: []in{probeOK(0, "clocks"), chrony(0.1, true, 0, 0.01), reading(0.1, timesource.Reading{Source: "kernel",
				Role: timesource.Fallback, Found: true, Up: true, HasData: true, Synchronized: true, ErrorBound: s(0.017)}),
				chrony(100, true, 0, 0.01), kernel(100, 0.017), chrony(1000, true, 0, 0.01), kernel(1000, 0.017), tick(1000)},
			want:      []string{"resume/starting@0.1s"},
			wantState: stepdown.StateOK,
		},
		{
			name:      "the kernel's view before chronyd's first poll does not count once chronyd answers",
			cfg:       noBound,
			await:     []string{"clocks", "kernel", "chrony"},
			inputs:    []in{probeOK(0, "clocks"), chronyPending, kernel(0.1, 16), chrony(0.3, true, 0, 0.01), kernel(0.3, 16), tick(100)},
			want:      []string{"resume/starting@0.3s"},
			wantState: stepdown.StateOK,
		},
		{
			name:  "the daemon's own status decides while it answers",
			cfg:   noBound,
			await: []string{"clocks", "kernel", "chrony"},
			inputs: []in{probeOK(0, "clocks"), chrony(0.1, true, 0, 0.01), kernel(0.1, 16),
				chrony(10, false, 0, 0.01), kernel(10, 16), chrony(70.5, false, 0, 0.01), kernel(70.5, 16), reason(stepdown.ReasonUnsynchronized)},
			want:      []string{"resume/starting@0.1s", "stepdown/unsynchronized@70.5s"},
			wantState: stepdown.StateStepdown,
		},
		{
			// chronyd -x does not discipline the kernel: maxerror stays
			// saturated while chronyd answers with a bound of microseconds.
			name:      "the kernel's error bound does not count while a daemon answers",
			cfg:       base,
			await:     []string{"clocks", "kernel", "chrony"},
			inputs:    []in{probeOK(0, "clocks"), chrony(0.1, true, 0, 0.000005), kernel(0.1, 16), tick(50), kernel(100, 16), tick(100)},
			want:      []string{"resume/starting@0.1s"},
			wantState: stepdown.StateOK,
		},
		{
			name:      "the kernel's error bound from before chronyd answered is cleared once it does",
			cfg:       base,
			await:     []string{"clocks", "kernel", "chrony"},
			inputs:    []in{probeOK(0, "clocks"), chronyAbsent, kernel(0.4, 16), chrony(1, true, 0, 0.000005), kernel(2, 16), tick(30.5), tick(31.5)},
			want:      []string{"stepdown/error_bound@0.4s", "stepdown/unsynchronized@0.4s", "resume/error_bound@31.5s"},
			wantState: stepdown.StateOK,
		},
		{
			name:      "the kernel's error bound decides when no daemon answers",
			cfg:       base,
			await:     []string{"clocks", "kernel", "chrony"},
			inputs:    []in{probeOK(0, "clocks"), chronyAbsent, kernel(0.4, 16), tick(100), kernel(100, 16)},
			want:      []string{"stepdown/error_bound@0.4s", "stepdown/unsynchronized@0.4s"},
			wantState: stepdown.StateStepdown,
		},
		{
			name:  "the kernel's maxerror decides when no daemon answers",
			cfg:   noBound,
			await: []string{"clocks", "kernel", "chrony"},
			inputs: []in{probeOK(0, "clocks"), chronyAbsent, kernel(0.4, 0.5), kernel(10, 16), tick(70),
				kernel(70.5, 16)},
			want:      []string{"resume/starting@0.4s", "stepdown/unsynchronized@70.5s"},
			wantState: stepdown.StateStepdown,
		},
		{
			name: "the reason is the condition holding now",
			cfg:  base,
			inputs: []in{probeOK(0, "clocks"), chrony(1, true, 0, 1.5), chronyLost(2), tick(12.5),
				reason(stepdown.ReasonProbeLost), chrony(20, true, 0, 1.5), reason(stepdown.ReasonErrorBound),
				chrony(21, true, 0, 0.01), tick(50), reason(stepdown.ReasonErrorBound), tick(51)},
			want:      []string{"resume/starting@0s", "stepdown/error_bound@1s", "stepdown/probe_lost@12.5s", "resume/error_bound@51s"},
			wantState: stepdown.StateOK,
		},
		{
			name: "a resume waits for a fresh reading of every polled source",
			cfg:  base,
			inputs: []in{probeOK(0, "clocks"), chrony(1, true, 0, 0.01), kernel(1, 0.01), step(2, 1), chrony(3, true, 0, 0.01),
				tick(40), kernel(41, 0.01), tick(41)},
			want:      []string{"resume/starting@0s", "stepdown/step@2s", "resume/step@41s"},
			wantState: stepdown.StateOK,
		},
		{
			name: "second opinions never step down",
			cfg:  base,
			inputs: []in{probeOK(0, "clocks"), reading(1, timesource.Reading{Source: "ntp_probe", Role: timesource.SecondOpinion, Found: true, Up: true, HasData: true, Offset: s(5)}),
				reading(2, timesource.Reading{Source: "ntp_probe", Role: timesource.SecondOpinion, Found: true, Err: errors.New("timeout")}), tick(100)},
			want:      []string{"resume/starting@0s"},
			wantState: stepdown.StateOK,
		},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			p := New(tc.cfg, 0)
			p.Await(tc.await...)
			feed(t, p, tc.inputs, tc.want, tc.wantState)
		})
	}
}

// feed gives p the inputs and checks the events (briefly) and the final
// state; it returns the events.
func feed(t *testing.T, p *Policy, inputs []in, want []string, wantState stepdown.State) []Event {
	t.Helper()
	var got []Event
	for _, f := range inputs {
		got = append(got, f(p)...)
	}
	if diff := cmp.Diff(want, brief(got)); diff != "" {
		t.Errorf("events (-want +got):\n%s", diff)
	}
	if st := p.Status().State; st != wantState {
		t.Errorf("final state %s, want %s", st, wantState)
	}
	return got
}

func TestPersistedRestore(t *testing.T) {
	t.Parallel()
	cfg := Config{HoldDown: 30 * time.Second, Triggers: DefaultTriggers()}
	p := New(cfg, 0)
	for _, f := range []in{probeOK(0, "clocks"), chrony(1, true, 3, 3.01)} {
		f(p)
	}
	ps := p.Persisted()
	want := Persisted{State: stepdown.StateStepdown, Reason: stepdown.ReasonErrorBound, Known: []string{"chrony"},
		Conditions: []Condition{{stepdown.ReasonErrorBound, "chrony"}, {stepdown.ReasonOffset, "chrony"}}}
	if diff := cmp.Diff(want, ps); diff != "" {
		t.Fatalf("Persisted while conditions hold (-want +got):\n%s", diff)
	}

	// The next process: still in stepdown, the conditions hold until a
	// fresh reading clears them, then the full hold-down.
	q := New(cfg, 0)
	q.Restore(ps, s(5))
	q.Await("clocks", "chrony")
	if st := q.Status(); st.State != stepdown.StateStepdown || st.Reason != stepdown.ReasonErrorBound {
		t.Fatalf("restored status %+v", st)
	}
	var got []Event
	for _, f := range []in{probeOK(6, "clocks"), tick(50), chrony(60, true, 0, 0.01), tick(89), tick(90)} {
		got = append(got, f(q)...)
	}
	if diff := cmp.Diff([]string{"resume/error_bound@90s"}, brief(got)); diff != "" {
		t.Errorf("events after restore (-want +got):\n%s", diff)
	}

	// Killed during the hold-down: the deadline carries over.
	r := New(cfg, 0)
	r.Restore(Persisted{State: stepdown.StateStepdown, Reason: stepdown.ReasonStep, HoldUntil: s(100), Known: []string{"chrony"}}, s(80))
	got = nil
	for _, f := range []in{probeOK(81, "clocks"), chrony(81, true, 0, 0.01), tick(99), chrony(100, true, 0, 0.01), tick(100)} {
		got = append(got, f(r)...)
	}
	if diff := cmp.Diff([]string{"resume/step@100s"}, brief(got)); diff != "" {
		t.Errorf("events after a restore during the hold-down (-want +got):\n%s", diff)
	}

	// A condition of a source turned off since does not hold for ever: the
	// hold-down counts from the start.
	v := New(cfg, 0)
	v.Restore(Persisted{State: stepdown.StateStepdown, Reason: stepdown.ReasonOffset,
		Conditions: []Condition{{stepdown.ReasonOffset, "ntpd"}}}, s(10))
	v.Await("clocks", "chrony")
	got = nil
	for _, f := range []in{probeOK(10, "clocks"), chrony(10.5, true, 0, 0.01), tick(40), chrony(40.5, true, 0, 0.01), tick(40.5)} {
		got = append(got, f(v)...)
	}
	if diff := cmp.Diff([]string{"resume/offset@40.5s"}, brief(got)); diff != "" {
		t.Errorf("events with a restored condition of a source turned off (-want +got):\n%s", diff)
	}

	// A trigger turned off with the restart (the configuration changed):
	// its condition no longer holds; the stepdown stays for the hold-down
	// from the start, as a reload that turns it off does.
	offCfg := cfg
	offCfg.Triggers.ErrorBound.Enabled = false
	w := New(offCfg, 0)
	w.Restore(Persisted{State: stepdown.StateStepdown, Reason: stepdown.ReasonErrorBound,
		Conditions: []Condition{{stepdown.ReasonErrorBound, "chrony"}}}, s(10))
	w.Await("clocks", "chrony")
	if st := w.Status(); st.State != stepdown.StateStepdown {
		t.Fatalf("restored with the trigger off: %+v, want stepdown until the hold-down ends", st)
	}
	got = nil
	for _, f := range []in{probeOK(10, "clocks"), chrony(10.5, true, 0, 0.01), tick(39.9), chrony(40.5, true, 0, 0.01), tick(40.5)} {
		got = append(got, f(w)...)
	}
	if diff := cmp.Diff([]string{"resume/error_bound@40.5s"}, brief(got)); diff != "" {
		t.Errorf("events with a restored condition of a trigger turned off (-want +got):\n%s", diff)
	}

	// A source found before the restart that no longer answers is lost,
	// not absent.
	u := New(cfg, 0)
	u.Restore(Persisted{Known: []string{"chrony"}}, 0)
	got = nil
	for _, f := range []in{probeOK(0, "clocks"), reading(0.1, timesource.Reading{Source: "chrony", Err: errors.New("gone")}), tick(11)} {
		got = append(got, f(u)...)
	}
	if diff := cmp.Diff([]string{"resume/starting@0s", "stepdown/probe_lost@11s"}, brief(got)); diff != "" {
		t.Errorf("events for a known source gone (-want +got):\n%s", diff)
	}
}

// BenchmarkReadings measures one poll's judgement: chrony, ntpd and the
// kernel, all healthy (the daemon pays it once a poll interval).
func BenchmarkReadings(b *testing.B) {
	p := New(Config{HoldDown: 30 * time.Second, Triggers: DefaultTriggers()}, 0)
	p.ProbeOK("clocks", 0)
	set := timesource.Set{
		"chrony": {Source: "chrony", Found: true, Up: true, HasData: true, Synchronized: true, ErrorBound: s(0.01)},
		"ntpd":   {Source: "ntpd", Found: true, Up: true, HasData: true, Synchronized: true, ErrorBound: s(0.01)},
		"kernel": {Source: "kernel", Role: timesource.Fallback, Found: true, Up: true, HasData: true, Synchronized: true, ErrorBound: s(0.01)},
	}
	mono := time.Duration(0)
	for b.Loop() {
		mono += time.Second
		p.Readings(set, mono)
	}
}
