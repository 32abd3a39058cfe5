package policy

import (
	"errors"
	"fmt"
	"maps"
	"math"
	"slices"
	"sort"
	"strings"
	"time"

	"github.com/clockwatch/clockwatch/internal/timesource"
	"github.com/clockwatch/clockwatch/stepdown"
)

// Config holds the hold-down period and the triggers. The server's config
// embeds the triggers under stepdown.triggers.
type Config struct {
	// HoldDown is how long the clock must stay healthy after the last
	// trigger before the state returns to ok.
	HoldDown time.Duration
	// Triggers configures each trigger.
	Triggers Triggers
}

// Triggers configures the conditions that cause a stepdown. A trigger whose
// Enabled is false ignores its input.
type Triggers struct {
	Step           Threshold `yaml:"step"`
	Offset         Threshold `yaml:"offset"`
	Unsynchronized Grace     `yaml:"unsynchronized"`
	ErrorBound     Threshold `yaml:"error_bound"`
	ProbeLost      Grace     `yaml:"probe_lost"`
	// Suspend fires on a resume from suspend longer than the threshold:
	// CLOCK_MONOTONIC stood still meanwhile, so leases timed with it ran
	// out without the holder noticing.
	Suspend Threshold `yaml:"suspend"`
	// GrandmasterChanged fires when a source's reading names a grandmaster
	// other than the last one it named (timesource.Reading.Grandmaster).
	GrandmasterChanged Switch `yaml:"grandmaster_changed"`
	// VMDisruption fires when a source's disruption marker (VMClock's)
	// changes, also across a restart in the same boot, and holds while a
	// source says its clock is unreliable.
	VMDisruption Switch `yaml:"vm_disruption"`
	// Sources replaces Offset, ErrorBound and Unsynchronized for the named
	// sources: a PTP clock runs at nanoseconds to microseconds, where the
	// 1 s that suits NTP means nothing. It is not read from the stepdown
	// section: each source's own section sets it (ptp.triggers), and the
	// configuration copies it here.
	Sources map[string]SourceTriggers `yaml:"-"`
}

// SourceTriggers are the triggers judged per source whose scale depends on
// the source.
type SourceTriggers struct {
	Offset     Threshold `yaml:"offset"`
	ErrorBound Threshold `yaml:"error_bound"`
	// Unsynchronized is, for ptp4l, its port not SLAVE (nor MASTER as a
	// synchronised grandmaster).
	Unsynchronized Grace `yaml:"unsynchronized"`
}

// Validate checks the triggers; errors name the field under prefix (e.g.
// "ptp.triggers").
func (t SourceTriggers) Validate(prefix string) error {
	var errs []error
	for _, row := range TriggerTable() {
		if row.PerSource {
			errs = append(errs, row.source(t).check(prefix, row.Key))
		}
	}
	return errors.Join(errs...)
}

// check says, for an enabled trigger under prefix whose magnitude (its
// threshold or grace) is not positive, which field is wrong.
func (s Setting) check(prefix, key string) error {
	if s.Enabled && s.Unit != "" && s.Limit <= 0 {
		return fmt.Errorf("%s.%s.%s: must be positive when enabled, got %s", prefix, key, s.Unit, s.Limit)
	}
	return nil
}

// For returns the per-source triggers that judge source: its own from
// Sources, else the global ones.
func (t Triggers) For(source string) SourceTriggers {
	if st, ok := t.Sources[source]; ok {
		return st
	}
	return SourceTriggers{Offset: t.Offset, ErrorBound: t.ErrorBound, Unsynchronized: t.Unsynchronized}
}

// Switch is a trigger without a magnitude.
type Switch struct {
	Enabled bool `yaml:"enabled"`
}

// Threshold is a trigger that fires when a magnitude is over Threshold.
type Threshold struct {
	Enabled   bool          `yaml:"enabled"`
	Threshold time.Duration `yaml:"threshold"`
}

// Grace is a trigger that fires when a bad condition has lasted longer than
// Grace.
type Grace struct {
	Enabled bool          `yaml:"enabled"`
	Grace   time.Duration `yaml:"grace"`
}

// DefaultTriggers returns the triggers clockwatch uses unless configured
// otherwise: all enabled, a step over 1 ms, an offset over 1 s, unsynchronised
// for over 60 s, an error bound over 1 s, a probe failing for over 10 s, a
// suspend over 1 ms, a grandmaster changed, a VM disruption.
func DefaultTriggers() Triggers {
	return Triggers{
		Step:           Threshold{Enabled: true, Threshold: time.Millisecond},
		Offset:         Threshold{Enabled: true, Threshold: time.Second},
		Unsynchronized: Grace{Enabled: true, Grace: 60 * time.Second},
		ErrorBound:     Threshold{Enabled: true, Threshold: time.Second},
		ProbeLost:      Grace{Enabled: true, Grace: 10 * time.Second},
		Suspend:        Threshold{Enabled: true, Threshold: time.Millisecond},

		GrandmasterChanged: Switch{Enabled: true},
		VMDisruption:       Switch{Enabled: true},
	}
}

// Validate checks the triggers; errors name the field under prefix (the YAML
// path of the triggers, e.g. "stepdown.triggers").
func (t Triggers) Validate(prefix string) error {
	var errs []error
	for _, row := range TriggerTable() {
		errs = append(errs, row.global(t).check(prefix, row.Key))
	}
	// Sources are checked by the sections that set them (ptp.triggers),
	// under their own names.
	return errors.Join(errs...)
}

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
	cfg    Config
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
		cfg: cfg, state: stepdown.StateUnknown, reason: stepdown.ReasonStarting, epoch: epoch,
		active: map[Condition]time.Duration{}, pending: map[Condition]time.Duration{},
		awaiting: map[string]bool{}, reported: map[string]time.Duration{}, polled: map[string]bool{},
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
	p.cfg = cfg
	// Only conditions hold (instant triggers leave none).
	off := func(c Condition) bool {
		row, ok := Lookup(c.Reason)
		return ok && !row.Setting(cfg.Triggers, c.Source).Enabled
	}
	for _, m := range []map[Condition]time.Duration{p.active, p.pending} {
		for c := range m {
			if off(c) {
				delete(m, c)
			}
		}
	}
	p.updateReason()
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

// Step is a wall-clock step seen by the step detector.
type Step struct {
	// Seconds is the size of the step, positive forward.
	Seconds float64
	// Mono is CLOCK_MONOTONIC when it was seen.
	Mono time.Duration
	// WallBefore and WallAfter are the wall clock around the step.
	WallBefore, WallAfter time.Time
	// Epoch is the step detector's epoch after this step (0: unchanged).
	Epoch uint64
	// How says how the step was seen; its name is the event's source on
	// the wire.
	How Seen
}

// Seen is how the step detector saw a step (the detector's step.Seen, named
// the same on the wire and in the journal).
type Seen uint8

// How steps are seen.
const (
	// SeenSampling: the periodic comparison of samples alone.
	SeenSampling Seen = iota + 1
	// SeenClockSet: the kernel's clock-set notification.
	SeenClockSet
	// SeenBoth: a clock-set notification, and sampling too.
	SeenBoth
	// SeenRestart: while clockwatch was not running (at its start).
	SeenRestart
)

var seenNames = [...]string{SeenSampling: "sampling", SeenClockSet: "clock_set", SeenBoth: "both", SeenRestart: "restart"}

// String is the name on the wire (the stepdown event's source): sampling,
// clock_set, both or restart; "" for none.
func (s Seen) String() string {
	if int(s) < len(seenNames) {
		return seenNames[s]
	}
	return "unknown"
}

// Step feeds a step. Steps at or below the threshold only update the epoch.
// A step seen at restart is a trigger like any other: its hold-down counts
// from when it was seen.
func (p *Policy) Step(s Step) []Event {
	if s.Epoch != 0 {
		p.epoch = s.Epoch
	}
	if !p.cfg.Triggers.Step.Enabled || math.Abs(s.Seconds) <= p.cfg.Triggers.Step.Threshold.Seconds() {
		return p.Tick(s.Mono)
	}
	p.bad(s.Mono)
	e := p.stepdownEvent(stepdown.ReasonStep, s.Mono)
	e.StepSeconds = stepdown.Float(s.Seconds)
	e.WallBefore, e.WallAfter, e.Source = s.WallBefore, s.WallAfter, s.How.String()
	e.Detail = fmt.Sprintf("wall clock stepped by %s", time.Duration(s.Seconds*float64(time.Second)))
	if s.How == SeenRestart {
		e.Detail += " while clockwatch was not running"
	}
	return []Event{e}
}

// Readings feeds one poll of every source: the authoritative and
// second-opinion sources first, then the fallbacks (the kernel), whose
// synchronisation is judged only when no authoritative source answers.
func (p *Policy) Readings(set timesource.Set, mono time.Duration) []Event {
	var out []Event
	rs := set.Sorted()
	for _, r := range rs {
		if r.Role != timesource.Fallback {
			out = append(out, p.Reading(r, mono)...)
		}
	}
	for _, r := range rs {
		if r.Role == timesource.Fallback {
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
	if r.Role == timesource.SecondOpinion {
		// Judged by health and the alerts; here evidence only, whatever
		// it says, lost or not.
		out = append(out, p.evidence(name, mono)...)
		return append(out, p.Tick(mono)...)
	}
	switch {
	case !r.Found && !p.known[name]:
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
			p.clearCond(Condition{stepdown.ReasonErrorBound, f}, mono)
		}
	} else {
		delete(p.daemonUp, name)
	}
	synced := r.HasData && r.Synchronized
	if r.Role == timesource.Fallback && len(p.daemonUp) > 0 {
		synced = true // judged from the daemon's own status instead
	}
	out = append(out, p.Synchronized(synced, name, mono)...)
	out = append(out, p.Grandmaster(r.Grandmaster, name, mono)...)
	if r.HasData {
		if r.Role != timesource.Fallback {
			out = append(out, p.Offset(r.Offset.Seconds(), name, mono)...)
		}
		if r.Role == timesource.Fallback && len(p.daemonUp) > 0 {
			p.clearCond(Condition{stepdown.ReasonErrorBound, name}, mono)
		} else {
			out = append(out, p.ErrorBound(r.ErrorBound.Seconds(), name, mono)...)
		}
	}
	out = append(out, p.evidence(name, mono)...)
	return append(out, p.Tick(mono)...)
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
	if last == "" || !p.cfg.Triggers.GrandmasterChanged.Enabled {
		return nil
	}
	p.bad(mono)
	e := p.stepdownEvent(stepdown.ReasonGrandmasterChanged, mono)
	e.Source = source
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
	if !seen || marker == last || !p.cfg.Triggers.VMDisruption.Enabled {
		return nil
	}
	p.bad(mono)
	e := p.stepdownEvent(stepdown.ReasonVMDisruption, mono)
	e.Source = source
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
	if !unreliable || !p.cfg.Triggers.VMDisruption.Enabled {
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

// Offset feeds source's estimate of the system clock's offset, in seconds.
// Each source is judged by its own threshold (Triggers.For).
func (p *Policy) Offset(seconds float64, source string, mono time.Duration) []Event {
	t := p.cfg.Triggers.For(source).Offset
	if !t.Enabled {
		return p.Tick(mono)
	}
	c := Condition{stepdown.ReasonOffset, source}
	if !(math.IsNaN(seconds) || math.Abs(seconds) > t.Threshold.Seconds()) {
		p.clearCond(c, mono)
		return p.Tick(mono)
	}
	e, fired := p.hold(c, mono)
	if !fired {
		return nil
	}
	e.OffsetSeconds = stepdown.Float(seconds)
	e.Detail = fmt.Sprintf("system clock offset %s from %s is over %s", time.Duration(seconds*float64(time.Second)), source, t.Threshold)
	return []Event{e}
}

// ErrorBound feeds the bound on the clock's error, in seconds, from source
// ("chrony", "kernel"); each source is judged on its own.
func (p *Policy) ErrorBound(seconds float64, source string, mono time.Duration) []Event {
	t := p.cfg.Triggers.For(source).ErrorBound
	if !t.Enabled {
		return p.Tick(mono)
	}
	c := Condition{stepdown.ReasonErrorBound, source}
	// A bound below zero means nothing: it never passes for a small one.
	if !(math.IsNaN(seconds) || seconds < 0 || seconds > t.Threshold.Seconds()) {
		p.clearCond(c, mono)
		return p.Tick(mono)
	}
	e, fired := p.hold(c, mono)
	if !fired {
		return nil
	}
	e.ErrorBoundSeconds = stepdown.Float(seconds)
	e.Detail = fmt.Sprintf("clock error bound %s from %s is over %s", time.Duration(seconds*float64(time.Second)), source, t.Threshold)
	return []Event{e}
}

// Woke feeds a wake-up from suspend: the machine was suspended for d. (Not
// the protocol's resume, which says trust is back: the trigger fires here.)
func (p *Policy) Woke(d, mono time.Duration) []Event {
	t := p.cfg.Triggers.Suspend
	if !t.Enabled || d <= t.Threshold {
		return p.Tick(mono)
	}
	p.bad(mono)
	e := p.stepdownEvent(stepdown.ReasonSuspend, mono)
	e.Detail = fmt.Sprintf("resumed after %s suspended: CLOCK_MONOTONIC stood still meanwhile", d)
	return []Event{e}
}

// Synchronized feeds whether source (e.g. "chrony", "kernel") reports the
// clock synchronised.
func (p *Policy) Synchronized(synced bool, source string, mono time.Duration) []Event {
	if !p.cfg.Triggers.For(source).Unsynchronized.Enabled {
		return p.Tick(mono)
	}
	c := Condition{stepdown.ReasonUnsynchronized, source}
	if synced {
		delete(p.pending, c)
		p.clearCond(c, mono)
		return p.Tick(mono)
	}
	if _, ok := p.pending[c]; !ok {
		if _, ok := p.active[c]; !ok {
			p.pending[c] = mono
		}
	}
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
	c := Condition{stepdown.ReasonProbeLost, name}
	delete(p.pending, c)
	p.clearCond(c, mono)
	return nil
}

// ProbeFailed reports that the named probe failed. Its first failure counts
// as that source's evidence (it is known not to answer).
func (p *Policy) ProbeFailed(name string, err error, mono time.Duration) []Event {
	if p.cfg.Triggers.ProbeLost.Enabled {
		c := Condition{stepdown.ReasonProbeLost, name}
		if _, ok := p.active[c]; !ok {
			if _, ok := p.pending[c]; !ok {
				p.pending[c] = mono
			}
		}
	}
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
		delete(p.pending, c)
		if e, fired := p.hold(c, mono); fired {
			e.Detail = fmt.Sprintf("%s at start", p.conditionText(c, 0))
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

// graceOf is the grace trigger of a condition that waits out a grace period
// (pending); NextDeadline and expireGrace both read it.
func (p *Policy) graceOf(c Condition) Grace {
	row, ok := Lookup(c.Reason)
	if !ok || row.Kind != Graced {
		return Grace{}
	}
	s := row.Setting(p.cfg.Triggers, c.Source)
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
		p.active[c] = mono
	}
	p.lastBad, p.haveBad = mono, true
	if len(ps.Conditions) == 0 {
		p.lastBad = ps.HoldUntil - p.cfg.HoldDown
	}
	p.updateReason()
}
