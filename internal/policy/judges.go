package policy

import (
	"fmt"
	"time"

	"github.com/clockwatch/clockwatch/stepdown"
)

// The judges the trigger table drives: one for every level row with a
// figure, one for every graced condition, one for every instant trigger.
// The inputs (Reading, Step, Woke, ...) call them with the row's reason.

// Level feeds the figure of a level trigger's reason (its row's figure:
// an offset, an error bound), in seconds, from source. Each source is judged
// by its own threshold (a PerSource row's setting for it). A reason that is
// no level row's feeds nothing: the policy only ticks.
func (p *Policy) Level(reason stepdown.Reason, seconds float64, source string, mono time.Duration) []Event {
	row, ok := Lookup(reason)
	if !ok || row.figure.of == nil {
		return p.Tick(mono)
	}
	return p.level(row, seconds, source, mono)
}

// level judges row's figure from source: over the threshold, a condition
// that holds the state down; at or under it, that condition cleared.
func (p *Policy) level(row Trigger, seconds float64, source string, mono time.Duration) []Event {
	c := Condition{row.Reason, source}
	s, _ := p.set.of(c)
	if !s.Enabled {
		return p.Tick(mono)
	}
	if !row.figure.over(seconds, s.Limit) {
		p.clearCond(c, mono)
		return p.Tick(mono)
	}
	e, fired := p.hold(c, mono)
	if !fired {
		return nil
	}
	row.figure.record(&e, seconds)
	e.Detail = fmt.Sprintf("%s %s from %s is over %s", row.figure.name, durationText(seconds), source, s.Limit)
	return []Event{e}
}

// instant fires an instant trigger of reason whose magnitude (a step, a
// suspend, in seconds; none for a switch) is over its threshold: the
// hold-down counts from mono, and the stepdown event from source is
// returned with fired set. A trigger that is off, or a magnitude at or under
// the threshold, fires nothing.
func (p *Policy) instant(reason stepdown.Reason, magnitude float64, source string, mono time.Duration) (e Event, fired bool) {
	s, _ := p.set.of(Condition{Reason: reason})
	if !s.Enabled || (s.Unit != "" && magnitude <= s.Limit.Seconds()) {
		return Event{}, false
	}
	p.bad(mono)
	e = p.stepdownEvent(reason, mono)
	e.Source = source
	return e, true
}

// graced judges a graced condition: bad (and its trigger enabled), it is
// pending from mono unless already pending or holding, and holds once its
// grace has passed (expireGrace); not bad, it is cleared.
func (p *Policy) graced(c Condition, bad bool, mono time.Duration) {
	if !bad || p.disabled(c) {
		delete(p.pending, c)
		p.clearCond(c, mono)
		return
	}
	if _, ok := p.pending[c]; !ok {
		if _, ok := p.active[c]; !ok {
			p.pending[c] = mono
		}
	}
}
