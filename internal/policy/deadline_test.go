package policy

import (
	"testing"

	"github.com/clockwatch/clockwatch/internal/timesource"
	"github.com/clockwatch/clockwatch/stepdown"
)

// TestNextDeadline checks the deadline the server's timer ticks at: a Tick
// one nanosecond before it changes nothing, a Tick at it announces (a grace
// period expires, a drill or the hold-down ends), so that ticking only there
// loses nothing against ticking every second.
func TestNextDeadline(t *testing.T) {
	t.Parallel()
	cfg := Config{HoldDown: s(30), Triggers: DefaultTriggers()} // grace: probe_lost 10 s, unsynchronized 60 s
	reading := func(at float64, r timesource.Reading) in {
		return func(p *Policy) []Event { return p.Reading(r, s(at)) }
	}
	chrony := timesource.Reading{Source: "chrony", Role: timesource.Authoritative, Found: true, Up: true, HasData: true,
		Synchronized: true}
	unsynced := chrony
	unsynced.Synchronized = false
	for _, tc := range []struct {
		name   string
		inputs []in
		// want is the deadline in seconds; -1: none.
		want float64
		// wantEvent is the event the Tick at the deadline announces.
		wantEvent string
	}{
		{name: "ok, nothing pending", inputs: []in{probeOK(0, "c")}, want: -1},
		{name: "before the start a grace does not run", inputs: []in{probeFail(0, "x")}, want: -1},
		{name: "probe lost: its grace", inputs: []in{probeOK(0, "c"), probeFail(5, "x"), probeFail(6, "x")},
			want: 15 + 1e-9, wantEvent: "stepdown/probe_lost@15.000000001s"},
		{name: "unsynchronised: its grace", inputs: []in{probeOK(0, "c"), synced(2, false, "chrony")},
			want: 62 + 1e-9, wantEvent: "stepdown/unsynchronized@62.000000001s"},
		{name: "the earliest of two graces", inputs: []in{probeOK(0, "c"), synced(2, false, "chrony"), probeFail(3, "x")},
			want: 13 + 1e-9, wantEvent: "stepdown/probe_lost@13.000000001s"},
		{name: "the start waits for an unsynchronised source: its grace", inputs: []in{
			func(p *Policy) []Event { p.Await("c", "chrony"); return nil }, probeOK(0, "c"), reading(2, unsynced)},
			want: 62 + 1e-9, wantEvent: "stepdown/unsynchronized@62.000000001s"},
		{name: "a grace cleared", inputs: []in{probeOK(0, "c"), probeFail(5, "x"), probeOK(7, "x")}, want: -1},
		{name: "a disabled grace", inputs: []in{probeOK(0, "c"), probeFail(5, "x"),
			func(p *Policy) []Event {
				c := cfg
				c.Triggers.ProbeLost.Enabled = false
				p.SetConfig(c)
				return nil
			}}, want: -1},
		{name: "hold-down after a step", inputs: []in{probeOK(0, "c"), step(10, 1)},
			want: 40, wantEvent: "resume/step@40s"},
		{name: "hold-down from a condition's end", inputs: []in{probeOK(0, "c"), offset(10, 2), offset(12, 0)},
			want: 42, wantEvent: "resume/offset@42s"},
		{name: "while a condition holds only input can end it", inputs: []in{probeOK(0, "c"), offset(10, 2)}, want: -1},
		{name: "hold-down waits for fresh readings", inputs: []in{probeOK(0, "c"), reading(1, chrony), step(10, 1)}, want: -1},
		{name: "hold-down once they are in", inputs: []in{probeOK(0, "c"), reading(1, chrony), step(10, 1), reading(11, chrony)},
			want: 40, wantEvent: "resume/step@40s"},
		{name: "drill", inputs: []in{probeOK(0, "c"), drill(10, 2)}, want: 12, wantEvent: "resume/drill@12s drill"},
		{name: "grace during a drill", inputs: []in{probeOK(0, "c"), drill(10, 20), probeFail(11, "x")},
			want: 21 + 1e-9, wantEvent: "stepdown/probe_lost@21.000000001s"},
		{name: "stepdown that was a drill", inputs: []in{probeOK(0, "c"), drill(10, 2), step(11, 1)},
			want: 41, wantEvent: "resume/step@41s"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			build := func() *Policy {
				p := New(cfg, 0)
				for _, f := range tc.inputs {
					f(p)
				}
				return p
			}
			p := build()
			d, ok := p.NextDeadline()
			if tc.want < 0 {
				if ok {
					t.Fatalf("deadline %s, want none", d)
				}
				return
			}
			if want := s(tc.want); !ok || d != want {
				t.Fatalf("deadline %s (%v), want %s", d, ok, want)
			}
			early := build()
			if evs := early.Tick(d - 1); len(evs) > 0 || early.Status() != p.Status() {
				t.Errorf("Tick 1 ns before the deadline: %v, state %v → %v", brief(evs), p.Status(), early.Status())
			}
			evs := p.Tick(d)
			if got := brief(evs); len(got) != 1 || got[0] != tc.wantEvent {
				t.Errorf("Tick at the deadline: %v, want [%s]", got, tc.wantEvent)
			}
			if st := p.Status().State; tc.wantEvent[:6] == "resume" && st != stepdown.StateOK {
				t.Errorf("state %s after the resume", st)
			}
		})
	}
}

// BenchmarkNextDeadline is what the announcer pays after every input.
func BenchmarkNextDeadline(b *testing.B) {
	p := New(Config{HoldDown: s(30), Triggers: DefaultTriggers()}, 0)
	p.ProbeOK("c", 0)
	p.Synchronized(false, "chrony", s(1))
	p.ProbeFailed("x", nil, s(2))
	for b.Loop() {
		if _, ok := p.NextDeadline(); !ok {
			b.Fatal("no deadline")
		}
	}
}
