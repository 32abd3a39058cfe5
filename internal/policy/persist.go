package policy

import (
	"maps"
	"sort"
	"time"

	"github.com/clockwatch/clockwatch/stepdown"
)

// Persisted is what a restart in the same boot needs to carry on where the
// stopped process left off: the state, the conditions holding, when the
// hold-down ends, and the sources found. Times are CLOCK_MONOTONIC; the
// server stores them in BOOTTIME with the boot id.
type Persisted struct {
	State      stepdown.State
	Reason     stepdown.Reason
	Conditions []Condition
	// HoldUntil is the earliest monotonic time the state may return to ok,
	// set when no condition holds any more; zero while one does (the
	// hold-down starts when the last clears) and outside stepdown.
	HoldUntil time.Duration
	// Known are the sources found in this boot.
	Known []string
	// Markers are the last disruption marker of each source that has one:
	// a marker that changed while clockwatch was not running steps down
	// at the restart.
	Markers map[string]uint64
}

// Persisted returns what to persist. A drill is not: a restart ends it.
func (p *Policy) Persisted() Persisted {
	var ps Persisted
	for s := range p.known {
		ps.Known = append(ps.Known, s)
	}
	sort.Strings(ps.Known)
	if len(p.marker) > 0 {
		ps.Markers = maps.Clone(p.marker)
	}
	if p.state != stepdown.StateStepdown || (p.reason == stepdown.ReasonDrill && len(p.active) == 0) {
		return ps
	}
	ps.State, ps.Reason, ps.Conditions = p.state, p.reason, p.Conditions()
	if ps.Reason == stepdown.ReasonDrill {
		ps.Reason = ps.Conditions[0].Reason
	}
	if len(p.active) == 0 {
		ps.HoldUntil = p.lastBad + p.cfg.HoldDown
	}
	return ps
}

// Restore carries on from what a process in the same boot persisted: a
// stepdown stays a stepdown with its conditions until fresh readings clear
// them and its hold-down ends; the sources it found count as found. Call it
// before feeding anything.
func (p *Policy) Restore(ps Persisted, mono time.Duration) {
	for _, s := range ps.Known {
		p.known[s] = true
	}
	for s, m := range ps.Markers {
		p.marker[s], p.restored[s] = m, true
	}
	if ps.State != stepdown.StateStepdown {
		return
	}
	p.state, p.reason = stepdown.StateStepdown, ps.Reason
	for _, c := range ps.Conditions {
		// A trigger turned off before this start (the configuration
		// changed with the restart) would hold its condition for ever.
		if !p.disabled(c) {
			p.active[c] = mono
		}
	}
	p.lastBad, p.haveBad = mono, true
	if len(ps.Conditions) == 0 {
		p.lastBad = ps.HoldUntil - p.cfg.HoldDown
	}
	p.updateReason()
}
