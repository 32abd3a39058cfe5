package policy

import (
	"fmt"
	"maps"
	"slices"
	"strings"
	"time"

	"github.com/clockwatch/clockwatch/internal/timesource"
	"github.com/clockwatch/clockwatch/stepdown"
)

// awaitSync says whether the start keeps waiting for source, an answering
// source that is not synchronised: only an awaited authoritative one, and
// only until it has been unsynchronised for its unsynchronized grace. A
// daemon that has just started (chronyd before the first poll of its
// servers) is then judged once it is synchronised, not stepped down for a
// state it leaves within seconds; one that stays unsynchronised steps down
// when the grace ends, as it would after the start.
func (p *Policy) awaitSync(role timesource.Role, synced bool, source string, mono time.Duration) bool {
	if p.started || role != timesource.Authoritative || !p.awaiting[source] || synced {
		delete(p.syncWait, source)
		return false
	}
	c := Condition{stepdown.ReasonUnsynchronized, source}
	g := p.graceOf(c)
	since, ok := p.pending[c]
	if !g.Enabled || !ok || mono-since > g.Grace {
		delete(p.syncWait, source)
		return false
	}
	p.syncWait[source] = true
	return true
}

// syncWaitOver counts as evidence the sources the start waited for that
// have now been unsynchronised for longer than their grace: the start ends
// with them, and their condition fires.
func (p *Policy) syncWaitOver(mono time.Duration) []Event {
	var out []Event
	for _, s := range slices.Sorted(maps.Keys(p.syncWait)) {
		c := Condition{stepdown.ReasonUnsynchronized, s}
		since, ok := p.pending[c]
		if ok && mono-since <= p.graceOf(c).Grace {
			continue
		}
		delete(p.syncWait, s)
		out = append(out, p.evidence(s, mono)...)
	}
	return out
}

// evidence records a report from source. When the last awaited source has
// reported, the start is over: the grace conditions seen meanwhile fire at
// once (nothing says how long they have held), and with no condition holding
// the state becomes ok.
func (p *Policy) evidence(source string, mono time.Duration) []Event {
	p.reported[source] = mono
	if p.started {
		return nil
	}
	delete(p.awaiting, source)
	if len(p.awaiting) > 0 {
		return nil
	}
	p.started = true
	// A condition restored from before a restart whose source is no
	// longer polled (turned off meanwhile) can never clear: drop it.
	if len(p.expect) > 0 {
		for _, c := range sortedConds(p.active) {
			if _, seen := p.reported[c.Source]; !seen && !slices.Contains(p.expect, c.Source) {
				p.clearCond(c, mono)
			}
		}
	}
	var out []Event
	for _, c := range sortedConds(p.pending) {
		// How long a condition has held is known only for one the start
		// waited out (its grace); the others were just seen.
		var held time.Duration
		if g := p.graceOf(c); g.Enabled && mono-p.pending[c] > g.Grace {
			held = mono - p.pending[c]
		}
		delete(p.pending, c)
		if e, fired := p.hold(c, mono); fired {
			e.Detail = fmt.Sprintf("%s at start", p.conditionText(c, held))
			out = append(out, e)
		}
	}
	if p.state != stepdown.StateUnknown {
		return out
	}
	p.state, p.reason = stepdown.StateOK, ""
	detail := "clockwatch is watching the clock"
	if len(p.expect) > 0 {
		detail = fmt.Sprintf("every source has reported (%s) and no trigger holds", strings.Join(p.expect, ", "))
	}
	return append(out, Event{Type: stepdown.TypeResume, State: stepdown.StateOK, Reason: stepdown.ReasonStarting,
		Epoch: p.epoch, Mono: mono, Detail: detail})
}
