package policy

import (
	"errors"
	"fmt"
	"maps"
	"math"
	"slices"
	"sort"
	"strconv"
	"strings"
	"time"

	"github.com/clockwatch/clockwatch/internal/timesource"
	"github.com/clockwatch/clockwatch/stepdown"
)

// Event is a change the policy asks the server to announce: a stepdown (Type
// stepdown.TypeStepdown) or a resume (stepdown.TypeResume). The server adds
// the sequence number.
type Event struct {
	Type   string
	State  stepdown.State
	Reason stepdown.Reason
	Epoch  uint64
	Drill  bool
	// Mono is the monotonic time of the observation that caused the event.
	Mono time.Duration
	// The details, set for the reason that has them.
	StepSeconds       *float64
	OffsetSeconds     *float64
	ErrorBoundSeconds *float64
	WallBefore        time.Time
	WallAfter         time.Time
	Source            string
	Detail            string
	HoldSeconds       float64
}

// Message converts the event into its wire form with the given seq.
func (e Event) Message(seq uint64) stepdown.Message {
	return stepdown.Message{
		Type: e.Type, State: e.State, Reason: e.Reason, Epoch: e.Epoch, Seq: seq, Drill: e.Drill,
		StepSeconds: e.StepSeconds, OffsetSeconds: e.OffsetSeconds, ErrorBoundSeconds: e.ErrorBoundSeconds,
		WallBefore: e.WallBefore, WallAfter: e.WallAfter, MonoNanos: int64(e.Mono), Source: e.Source,
		Detail: e.Detail, HoldSeconds: e.HoldSeconds,
	}
}

// Status is the current state, with the reason and details of the event
// that caused it, for a hello or a heartbeat.
type Status struct {
	State  stepdown.State
	Reason stepdown.Reason
	Epoch  uint64
	Drill  bool
	// DisruptionMarker is the last disruption marker (VMClock's) the
	// policy judged, with HasDisruptionMarker: the bounded-time segment
	// copies it, so that a reader who finds another marker on the device
	// knows the segment does not speak for the clock yet.
	DisruptionMarker    uint64
	HasDisruptionMarker bool
}

// Condition is one trigger holding for one source: what keeps the state in
// stepdown until it clears.
type Condition struct {
	Reason stepdown.Reason `json:"reason"`
	Source string          `json:"source"`
}

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

// Step feeds a step. Steps at or below the threshold only update the epoch.
// A step seen at restart is a trigger like any other: its hold-down counts
// from when it was seen.
func (p *Policy) Step(s Step) []Event {
	if s.Epoch != 0 {
		p.epoch = s.Epoch
	}
	e, fired := p.instant(stepdown.ReasonStep, math.Abs(s.Seconds), s.How.String(), s.Mono)
	if !fired {
		return p.Tick(s.Mono)
	}
	e.StepSeconds = stepdown.Float(s.Seconds)
	e.WallBefore, e.WallAfter = s.WallBefore, s.WallAfter
	e.Detail = fmt.Sprintf("wall clock stepped by %s", durationText(s.Seconds))
	if s.How == SeenRestart {
		e.Detail += " while clockwatch was not running"
	}
	return []Event{e}
}

// Readings feeds one poll of every source: the authoritative and
// second-opinion sources first, then the fallbacks (the kernel), whose
// synchronisation is judged only when no authoritative source answers.
//
// While an authoritative source has not been polled yet (chronyd's poller
// before its first answer), the fallbacks are not judged either: they would
// speak for a clock a daemon is about to describe (chronyd -x leaves the
// kernel's maxerror at 16 s), and the start waits for both anyway.
func (p *Policy) Readings(set timesource.Set, mono time.Duration) []Event {
	var out []Event
	rs := set.Sorted()
	authPending := false
	for _, r := range rs {
		if r.Role != timesource.Fallback {
			out = append(out, p.Reading(r, mono)...)
			authPending = authPending || (r.Role == timesource.Authoritative && r.Usable().Pending())
		}
	}
	for _, r := range rs {
		if r.Role == timesource.Fallback {
			if authPending {
				out = append(out, p.Tick(mono)...)
				continue
			}
			out = append(out, p.Reading(r, mono)...)
		}
	}
	return out
}

// Reading feeds one normalised reading. A source not yet polled counts for
// nothing; one that has never answered in this boot is absent and raises
// nothing; one that stops answering is a probe failure; a second opinion
// only counts as evidence. Offset, error bound and synchronisation are judged
// per source. A fallback's synchronisation counts only while no
// authoritative source answers with a time solution: the kernel's status
// says what a daemon told it (chronyd leaves STA_UNSYNC set without rtcsync),
// so its maxerror speaks only for a clock nobody else describes: a fallback's
// error bound, like its synchronisation, counts only while no authoritative
// source answers (chronyd -x leaves the kernel's maxerror saturated at 16 s
// while its own bound is microseconds).
func (p *Policy) Reading(r timesource.Reading, mono time.Duration) []Event {
	// A reading whose figures mean nothing (a bound below zero, below
	// |offset|: a wrapped conversion) is a failed poll, never a good one.
	r = r.Usable()
	name := r.Source
	if r.Pending() {
		return p.Tick(mono)
	}
	p.polled[name] = true
	var out []Event
	if r.Found && r.Up && (r.HasDisruptionMarker || r.ClockUnreliable) {
		// Whatever the source's role: the hypervisor's word on the clock.
		if r.HasDisruptionMarker {
			out = append(out, p.Disruption(r.DisruptionMarker, name, mono)...)
		}
		out = append(out, p.Unreliable(r.ClockUnreliable, name, mono)...)
	}
	rows := triggerTable()
	for _, row := range rows {
		// The rows judged whatever the source's role (the fleet's
		// majority judge): a verdict that decides nothing leaves the
		// condition as it was.
		if row.verdict == nil {
			continue
		}
		if bad, judged := row.verdict(r); judged {
			p.detail[name] = r.Detail
			p.graced(Condition{row.Reason, name}, bad, mono)
		}
	}
	if r.Role == timesource.SecondOpinion {
		// Judged by health and the alerts; here evidence only, whatever
		// it says, lost or not.
		out = append(out, p.evidence(name, mono)...)
		return append(out, p.Tick(mono)...)
	}
	switch {
	case !r.Found && !p.known[name] && r.IsAbsent():
		// Looked for and not there (each source says so with
		// timesource.ErrAbsent): a host kept by another daemon.
		delete(p.daemonUp, name)
		out = append(out, p.evidence(name, mono)...)
		return append(out, p.Tick(mono)...)
	case !r.Up || !r.Found:
		delete(p.daemonUp, name)
		err := r.Err
		if err == nil {
			err = errors.New("no answer")
		}
		out = append(out, p.ProbeFailed(name, err, mono)...)
		return append(out, p.evidence(name, mono)...)
	}
	p.known[name] = true
	p.detail[name] = r.Detail
	if r.Role == timesource.Fallback {
		p.fallbacks[name] = true
	}
	out = append(out, p.probeOK(name, mono)...)
	if r.Role == timesource.Authoritative && r.HasData {
		p.daemonUp[name] = true
		// The daemon's own status decides from now on: what a fallback
		// said while none answered (at start, chronyd's first poll not
		// yet in) no longer counts.
		for f := range p.fallbacks {
			c := Condition{stepdown.ReasonUnsynchronized, f}
			delete(p.pending, c)
			p.clearCond(c, mono)
			for _, row := range rows {
				if row.figure.fallback {
					p.clearCond(Condition{row.Reason, f}, mono)
				}
			}
		}
	} else {
		delete(p.daemonUp, name)
	}
	synced := r.HasData && r.Synchronized
	if r.Role == timesource.Fallback && len(p.daemonUp) > 0 {
		synced = true // judged from the daemon's own status instead
	}
	out = append(out, p.Synchronized(synced, name, mono)...)
	// While the start waits for it to synchronise, a source's offset and
	// bound are not those of a time solution (chronyd before its first
	// poll says 1.5 s): they are judged once it has one, or the wait ends.
	wait := p.awaitSync(r.Role, synced, name, mono)
	out = append(out, p.Grandmaster(r.Grandmaster, name, mono)...)
	if r.HasData && !wait {
		// Every level row's figure, in the table's order.
		for _, row := range rows {
			f := row.figure
			switch {
			case f.of == nil:
			case r.Role != timesource.Fallback:
				out = append(out, p.level(row, f.of(r), name, mono)...)
			case !f.fallback:
				// A fallback's figure of this kind is not judged.
			case len(p.daemonUp) > 0:
				p.clearCond(Condition{row.Reason, name}, mono)
			default:
				out = append(out, p.level(row, f.of(r), name, mono)...)
			}
		}
	}
	if !wait {
		out = append(out, p.evidence(name, mono)...)
	}
	return append(out, p.Tick(mono)...)
}

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

// Grandmaster feeds the grandmaster source follows (empty: none, or not
// known now). A change from one grandmaster to another is a trigger, like a
// step: the hold-down counts from it. Losing the grandmaster and finding the
// same one again is not (the port state covers the gap), and neither is the
// first one seen (after a restart, a change made meanwhile is not seen).
func (p *Policy) Grandmaster(gm, source string, mono time.Duration) []Event {
	last := p.grandmaster[source]
	if gm == "" || gm == last {
		return nil
	}
	p.grandmaster[source] = gm
	if last == "" {
		return nil
	}
	e, fired := p.instant(stepdown.ReasonGrandmasterChanged, 0, source, mono)
	if !fired {
		return nil
	}
	e.Detail = fmt.Sprintf("%s follows grandmaster %s, was %s: the time can move by their difference", source, gm, last)
	return []Event{e}
}

// Disruption feeds the disruption marker source (VMClock) shows. A marker
// other than the last one the source showed, in this process or in the one
// before it in this boot (Restore), is a trigger like a step: the hypervisor
// moved the VM onto another host or restored it from a snapshot, and the
// hold-down counts from now. The first marker seen in a boot is not.
func (p *Policy) Disruption(marker uint64, source string, mono time.Duration) []Event {
	last, seen := p.marker[source]
	restored := p.restored[source]
	p.marker[source], p.restored[source] = marker, false
	p.lastMarker, p.hasLastMarker = marker, true
	if !seen || marker == last {
		return nil
	}
	e, fired := p.instant(stepdown.ReasonVMDisruption, 0, source, mono)
	if !fired {
		return nil
	}
	e.Detail = fmt.Sprintf("%s disruption marker %d, was %d: the VM was migrated or restored from a snapshot", source, marker, last)
	if restored {
		e.Detail += " while clockwatch was not running"
	}
	return []Event{e}
}

// Unreliable feeds whether source says the clock is unreliable (VMClock's
// clock status): a condition that holds the state down while it lasts.
func (p *Policy) Unreliable(unreliable bool, source string, mono time.Duration) []Event {
	c := Condition{stepdown.ReasonVMDisruption, source}
	if !unreliable || p.disabled(c) {
		p.clearCond(c, mono)
		return nil
	}
	e, fired := p.hold(c, mono)
	if !fired {
		return nil
	}
	e.Detail = fmt.Sprintf("%s says the clock is unreliable", source)
	return []Event{e}
}

// Woke feeds a wake-up from suspend: the machine was suspended for d. (Not
// the protocol's resume, which says trust is back: the trigger fires here.)
func (p *Policy) Woke(d, mono time.Duration) []Event {
	e, fired := p.instant(stepdown.ReasonSuspend, d.Seconds(), "", mono)
	if !fired {
		return p.Tick(mono)
	}
	e.Detail = fmt.Sprintf("resumed after %s suspended: CLOCK_MONOTONIC stood still meanwhile", d)
	return []Event{e}
}

// Synchronized feeds whether source (e.g. "chrony", "kernel") reports the
// clock synchronised.
func (p *Policy) Synchronized(synced bool, source string, mono time.Duration) []Event {
	p.graced(Condition{stepdown.ReasonUnsynchronized, source}, !synced, mono)
	return p.Tick(mono)
}

// ProbeOK reports that the named probe (or source) produced a good reading:
// it counts as that source's evidence.
func (p *Policy) ProbeOK(name string, mono time.Duration) []Event {
	out := p.probeOK(name, mono)
	out = append(out, p.evidence(name, mono)...)
	return append(out, p.Tick(mono)...)
}

func (p *Policy) probeOK(name string, mono time.Duration) []Event {
	p.graced(Condition{stepdown.ReasonProbeLost, name}, false, mono)
	return nil
}

// ProbeFailed reports that the named probe failed. Its first failure counts
// as that source's evidence (it is known not to answer).
func (p *Policy) ProbeFailed(name string, err error, mono time.Duration) []Event {
	p.graced(Condition{stepdown.ReasonProbeLost, name}, true, mono)
	out := p.evidence(name, mono)
	return append(out, p.Tick(mono)...)
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

// Drill starts a drill: a stepdown with Drill set and the given reason and
// step, then a resume after hold. It fails when the state is not ok.
func (p *Policy) Drill(reason stepdown.Reason, stepSeconds *float64, hold, mono time.Duration) ([]Event, error) {
	if p.state != stepdown.StateOK {
		return nil, fmt.Errorf("the state is %s (%s): a drill needs state ok", p.state, p.reason)
	}
	if reason == "" {
		reason = stepdown.ReasonDrill
	}
	p.state, p.reason = stepdown.StateStepdown, stepdown.ReasonDrill
	p.drillUntil = mono + hold
	e := Event{Type: stepdown.TypeStepdown, State: stepdown.StateStepdown, Reason: reason, Epoch: p.epoch, Drill: true,
		Mono: mono, StepSeconds: stepSeconds, HoldSeconds: hold.Seconds(), Detail: "drill: nothing is wrong with the clock"}
	return []Event{e}, nil
}

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

func sortedConds(m map[Condition]time.Duration) []Condition {
	cs := make([]Condition, 0, len(m))
	for c := range m {
		cs = append(cs, c)
	}
	sort.Slice(cs, func(i, j int) bool {
		if cs[i].Reason != cs[j].Reason {
			return cs[i].Reason < cs[j].Reason
		}
		return cs[i].Source < cs[j].Source
	})
	return cs
}

// conditionText says what a grace condition means, for an event's detail
// (the trigger table's text).
func (p *Policy) conditionText(c Condition, d time.Duration) string {
	row, _ := Lookup(c.Reason)
	what := row.Text(c, p.detail[c.Source])
	if d > 0 {
		what += fmt.Sprintf(" for %s", d.Round(time.Millisecond))
	}
	return what
}

// durationText writes a figure in seconds for an event's detail: as a
// time.Duration within its range (±292 years), as a number of seconds past
// it. time.Duration(x*1e9) wraps there: a saturated error bound printed as
// "-2562047h47m16.854775808s" under a verdict that was right.
func durationText(seconds float64) string {
	if math.IsNaN(seconds) || math.Abs(seconds) >= float64(math.MaxInt64)/1e9 {
		return strconv.FormatFloat(seconds, 'g', 4, 64) + "s"
	}
	return time.Duration(seconds * float64(time.Second)).String()
}
