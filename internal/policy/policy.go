package policy

import (
	"fmt"
	"time"

	"github.com/clockwatch/clockwatch/stepdown"
)

// Policy is the state machine. The zero value is not usable; call New. It is
// not safe for concurrent use: the server serialises calls.
type Policy struct {
	cfg Config
	// set are cfg's triggers, row by row.
	set    settings
	state  stepdown.State
	reason stepdown.Reason
	epoch  uint64

	// active are the conditions holding now, with when each began to
	// hold; pending the grace conditions (unsynchronized, probe_lost) seen
	// but not yet for longer than their grace, with their first report. A
	// step or a suspend is instantaneous and only moves lastBad.
	active  map[Condition]time.Duration
	pending map[Condition]time.Duration
	lastBad time.Duration
	haveBad bool

	// The evidence. expect are the sources whose first report the state
	// waits for (none: the first report of any); awaiting those still
	// silent; started is set once all have reported. reported is each
	// source's last report, polled the sources fed as readings (a resume
	// waits for a reading of each taken after the last bad moment).
	expect   []string
	awaiting map[string]bool
	started  bool
	// syncWait are the awaited authoritative sources that answer without
	// being synchronised yet (chronyd before the first poll of its
	// servers): the start waits for them until they synchronise or their
	// unsynchronized grace has passed (pending says since when).
	syncWait map[string]bool
	reported map[string]time.Duration
	polled   map[string]bool
	// known are the sources found in this boot (by this process or, after
	// a restart, by the one before): one that stops answering is lost,
	// not absent. daemonUp are the authoritative sources answering with a
	// time solution: while one does, a fallback's synchronisation is not
	// judged.
	known     map[string]bool
	daemonUp  map[string]bool
	fallbacks map[string]bool

	// grandmaster is the last grandmaster each source named; detail its
	// last Detail (ptp4l's port state), for the events' text.
	grandmaster map[string]string
	detail      map[string]string

	// marker is the last disruption marker each source had, judged by
	// this process or restored from the one before (restored says which);
	// lastMarker the latest judged in this process, for Status.
	marker        map[string]uint64
	restored      map[string]bool
	lastMarker    uint64
	hasLastMarker bool

	// drill in progress: stepdown because of a drill only.
	drillUntil time.Duration
}

// New returns a policy in state unknown (reason starting) with the given
// epoch. It leaves that state once every source given to Await has
// reported (or, without Await, at the first report of any), for stepdown if
// a condition holds, else for ok.
func New(cfg Config, epoch uint64) *Policy {
	return &Policy{
		cfg: cfg, set: resolve(cfg.Triggers), state: stepdown.StateUnknown, reason: stepdown.ReasonStarting, epoch: epoch,
		active: map[Condition]time.Duration{}, pending: map[Condition]time.Duration{},
		awaiting: map[string]bool{}, syncWait: map[string]bool{}, reported: map[string]time.Duration{}, polled: map[string]bool{},
		known: map[string]bool{}, daemonUp: map[string]bool{}, fallbacks: map[string]bool{},
		grandmaster: map[string]string{}, detail: map[string]string{},
		marker: map[string]uint64{}, restored: map[string]bool{},
	}
}

// Await names the sources whose first reading (or failure) the state waits
// for before it leaves unknown. Call it before feeding anything.
func (p *Policy) Await(sources ...string) {
	p.expect = append(p.expect, sources...)
	for _, s := range sources {
		p.awaiting[s] = true
	}
}

// SetConfig changes the thresholds and the hold-down (a configuration
// reload). The state and the conditions seen so far are kept; a condition
// whose trigger is now disabled no longer holds the state.
func (p *Policy) SetConfig(cfg Config) {
	p.cfg, p.set = cfg, resolve(cfg.Triggers)
	for _, m := range []map[Condition]time.Duration{p.active, p.pending} {
		for c := range m {
			if p.disabled(c) {
				delete(m, c)
			}
		}
	}
	p.updateReason()
}

// disabled says whether c's trigger is off: such a condition holds
// nothing, since a disabled trigger's input is ignored and so never clears
// it. Only conditions hold (instant triggers leave none). A reason that is
// no row's (restored from another build) is not disabled.
func (p *Policy) disabled(c Condition) bool {
	s, ok := p.set.of(c)
	return ok && !s.Enabled
}

// Status returns the current state. Its reason is the condition holding now
// (the latest to begin when several hold), else the last that held.
func (p *Policy) Status() Status {
	return Status{State: p.state, Reason: p.reason, Epoch: p.epoch, Drill: p.state == stepdown.StateStepdown && p.reason == stepdown.ReasonDrill,
		DisruptionMarker: p.lastMarker, HasDisruptionMarker: p.hasLastMarker}
}

// Started reports whether every awaited source has reported.
func (p *Policy) Started() bool { return p.started }

// Conditions returns the conditions holding now, sorted.
func (p *Policy) Conditions() []Condition { return sortedConds(p.active) }

// Tick advances time: grace periods expire, and the hold-down or a drill
// ends. The server calls it at NextDeadline and at every heartbeat. The state returns to
// ok only after the start, with no condition holding for the hold-down, and
// with a reading of every polled source taken since the last bad moment: a
// resume is always the verdict of fresh evidence, never of silence.
func (p *Policy) Tick(mono time.Duration) []Event {
	var out []Event
	if p.started {
		out = p.expireGrace(out, mono)
	} else if len(p.syncWait) > 0 {
		out = p.syncWaitOver(mono)
	}
	if len(p.active) > 0 {
		p.bad(mono)
	}
	if len(out) > 0 || p.state != stepdown.StateStepdown {
		return out
	}
	if p.reason == stepdown.ReasonDrill {
		if mono >= p.drillUntil {
			p.state, p.reason = stepdown.StateOK, ""
			out = append(out, Event{Type: stepdown.TypeResume, State: stepdown.StateOK, Reason: stepdown.ReasonDrill, Epoch: p.epoch, Drill: true, Mono: mono, Detail: "drill over"})
		}
		return out
	}
	if !p.started || len(p.active) > 0 || mono-p.lastBad < p.cfg.HoldDown || !p.freshSince(p.lastBad) {
		return out
	}
	ended := p.reason
	p.state, p.reason = stepdown.StateOK, ""
	out = append(out, Event{Type: stepdown.TypeResume, State: stepdown.StateOK, Reason: ended, Epoch: p.epoch, Mono: mono,
		Detail: fmt.Sprintf("clock healthy for %s", p.cfg.HoldDown)})
	return out
}

// freshSince reports whether every polled source has reported at or after t.
func (p *Policy) freshSince(t time.Duration) bool {
	for s := range p.polled {
		if p.reported[s] < t {
			return false
		}
	}
	return true
}

// hold makes c hold from mono. The first time it does, the state moves to
// stepdown and the event to announce is returned with fired set.
func (p *Policy) hold(c Condition, mono time.Duration) (Event, bool) {
	p.bad(mono)
	if _, ok := p.active[c]; ok {
		return Event{}, false
	}
	p.active[c] = mono
	e := p.stepdownEvent(c.Reason, mono)
	e.Source = c.Source
	return e, true
}

// clearCond ends c if it held: the hold-down counts from mono, and the
// reason becomes the condition still holding, if any.
func (p *Policy) clearCond(c Condition, mono time.Duration) {
	if _, ok := p.active[c]; !ok {
		return
	}
	delete(p.active, c)
	p.bad(mono)
	p.updateReason()
}

// updateReason makes the reason of a stepdown the latest condition still
// holding; with none, the last one stays (the hold-down runs on it).
func (p *Policy) updateReason() {
	if p.state != stepdown.StateStepdown || p.reason == stepdown.ReasonDrill || len(p.active) == 0 {
		return
	}
	var latest Condition
	first := true
	for _, c := range sortedConds(p.active) {
		if first || p.active[c] > p.active[latest] {
			latest, first = c, false
		}
	}
	p.reason = latest.Reason
}

// bad records that the clock was untrustworthy at mono.
func (p *Policy) bad(mono time.Duration) {
	if !p.haveBad || mono > p.lastBad {
		p.lastBad, p.haveBad = mono, true
	}
}

// stepdownEvent moves to stepdown for reason and returns the event. A real
// trigger during a drill turns the drill into a real stepdown.
func (p *Policy) stepdownEvent(reason stepdown.Reason, mono time.Duration) Event {
	p.state, p.reason = stepdown.StateStepdown, reason
	return Event{Type: stepdown.TypeStepdown, State: stepdown.StateStepdown, Reason: reason, Epoch: p.epoch, Mono: mono}
}
