package policy

import (
	"time"

	"github.com/clockwatch/clockwatch/stepdown"
)

// graceOf is the grace trigger of a condition that waits out a grace period
// (pending); NextDeadline and expireGrace both read it.
func (p *Policy) graceOf(c Condition) Grace {
	row, ok := Lookup(c.Reason)
	if !ok || row.Kind != Graced {
		return Grace{}
	}
	s, _ := p.set.of(c)
	return Grace{Enabled: s.Enabled, Grace: s.Limit}
}

// NextDeadline is the CLOCK_MONOTONIC time at which Tick, given no input
// meanwhile, would next change something: a grace period expires, a drill
// ends, or the hold-down ends. ok is false when nothing is pending: only an
// input can change the state then (every input ticks the policy itself). The
// server ticks at this deadline rather than every second, so an idle daemon
// does not wake to find nothing to do; it asks again after every input.
func (p *Policy) NextDeadline() (deadline time.Duration, ok bool) {
	at := func(t time.Duration) {
		if !ok || t < deadline {
			deadline, ok = t, true
		}
	}
	if !p.started {
		for s := range p.syncWait {
			// The start stops waiting for an unsynchronised source
			// once its grace is over: syncWaitOver.
			c := Condition{stepdown.ReasonUnsynchronized, s}
			if since, ok := p.pending[c]; ok {
				at(since + p.graceOf(c).Grace + 1)
			}
		}
	}
	if p.started {
		for c, since := range p.pending {
			// expireGrace fires once the condition has lasted longer
			// than its grace: one nanosecond past it.
			if g := p.graceOf(c); g.Enabled {
				at(since + g.Grace + 1)
			}
		}
	}
	if p.state == stepdown.StateStepdown {
		switch {
		case p.reason == stepdown.ReasonDrill:
			at(p.drillUntil)
		case p.started && len(p.active) == 0 && p.freshSince(p.lastBad):
			// Without fresh readings the resume waits for them, and
			// each reading ticks the policy itself.
			at(p.lastBad + p.cfg.HoldDown)
		}
	}
	return deadline, ok
}

// expireGrace fires the grace conditions bad for longer than their grace:
// each holds the state down, and its first such Tick announces a stepdown.
func (p *Policy) expireGrace(out []Event, mono time.Duration) []Event {
	for _, c := range sortedConds(p.pending) {
		g := p.graceOf(c)
		d := mono - p.pending[c]
		if !g.Enabled || d <= g.Grace {
			continue
		}
		delete(p.pending, c)
		if e, fired := p.hold(c, mono); fired {
			e.Detail = p.conditionText(c, d)
			out = append(out, e)
		}
	}
	return out
}
