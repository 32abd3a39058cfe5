package policy

import (
	"errors"
	"fmt"
	"math"
	"sort"
	"time"

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
// suspend over 1 ms.
func DefaultTriggers() Triggers {
	return Triggers{
		Step:           Threshold{Enabled: true, Threshold: time.Millisecond},
		Offset:         Threshold{Enabled: true, Threshold: time.Second},
		Unsynchronized: Grace{Enabled: true, Grace: 60 * time.Second},
		ErrorBound:     Threshold{Enabled: true, Threshold: time.Second},
		ProbeLost:      Grace{Enabled: true, Grace: 10 * time.Second},
		Suspend:        Threshold{Enabled: true, Threshold: time.Millisecond},
	}
}

// Validate checks the triggers; errors name the field under prefix (the YAML
// path of the triggers, e.g. "stepdown.triggers").
func (t Triggers) Validate(prefix string) error {
	var errs []error
	check := func(name string, enabled bool, d time.Duration, what string) {
		if enabled && d <= 0 {
			errs = append(errs, fmt.Errorf("%s.%s.%s: must be positive when enabled, got %s", prefix, name, what, d))
		}
	}
	check("step", t.Step.Enabled, t.Step.Threshold, "threshold")
	check("offset", t.Offset.Enabled, t.Offset.Threshold, "threshold")
	check("unsynchronized", t.Unsynchronized.Enabled, t.Unsynchronized.Grace, "grace")
	check("error_bound", t.ErrorBound.Enabled, t.ErrorBound.Threshold, "threshold")
	check("probe_lost", t.ProbeLost.Enabled, t.ProbeLost.Grace, "grace")
	check("suspend", t.Suspend.Enabled, t.Suspend.Threshold, "threshold")
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
}

// Policy is the state machine. The zero value is not usable; call New. It is
// not safe for concurrent use: the server serialises calls.
type Policy struct {
	cfg    Config
	state  stepdown.State
	reason stepdown.Reason
	epoch  uint64

	// active conditions: offset, error bound, per-source unsync, per-probe
	// failures. A step is instantaneous and only moves lastBad.
	offsetBad      bool
	errorBad       map[string]bool          // source → error bound over the threshold
	unsyncSince    map[string]time.Duration // source → first unsynchronised report
	unsyncFired    map[string]bool
	probeFailSince map[string]time.Duration
	probeFired     map[string]bool
	lastBad        time.Duration
	haveBad        bool

	// drill in progress: stepdown because of a drill only.
	drillUntil time.Duration
}

// New returns a policy in state unknown (reason starting) with the given
// epoch. It becomes ok at the first ProbeOK unless a condition holds.
func New(cfg Config, epoch uint64) *Policy {
	return &Policy{
		cfg: cfg, state: stepdown.StateUnknown, reason: stepdown.ReasonStarting, epoch: epoch,
		unsyncSince: map[string]time.Duration{}, unsyncFired: map[string]bool{}, errorBad: map[string]bool{},
		probeFailSince: map[string]time.Duration{}, probeFired: map[string]bool{},
	}
}

// SetConfig changes the thresholds and the hold-down (a configuration
// reload). The state and the conditions seen so far are kept; a condition
// whose trigger is now disabled no longer holds the state.
func (p *Policy) SetConfig(cfg Config) {
	p.cfg = cfg
	if !cfg.Triggers.Offset.Enabled {
		p.offsetBad = false
	}
	if !cfg.Triggers.ErrorBound.Enabled {
		clear(p.errorBad)
	}
	if !cfg.Triggers.Unsynchronized.Enabled {
		clear(p.unsyncSince)
		clear(p.unsyncFired)
	}
	if !cfg.Triggers.ProbeLost.Enabled {
		clear(p.probeFailSince)
		clear(p.probeFired)
	}
}

// Status returns the current state.
func (p *Policy) Status() Status {
	return Status{State: p.state, Reason: p.reason, Epoch: p.epoch, Drill: p.state == stepdown.StateStepdown && p.reason == stepdown.ReasonDrill}
}

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
	// How says how the step was seen (e.g. "timerfd", "sample").
	How string
}

// Step feeds a step. Steps at or below the threshold only update the epoch.
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
	e.WallBefore, e.WallAfter, e.Source = s.WallBefore, s.WallAfter, s.How
	e.Detail = fmt.Sprintf("wall clock stepped by %s", time.Duration(s.Seconds*float64(time.Second)))
	return []Event{e}
}

// Offset feeds chrony's estimate of the system clock's offset, in seconds.
func (p *Policy) Offset(seconds float64, mono time.Duration) []Event {
	t := p.cfg.Triggers.Offset
	if !t.Enabled {
		return p.Tick(mono)
	}
	was := p.offsetBad
	p.offsetBad = math.IsNaN(seconds) || math.Abs(seconds) > t.Threshold.Seconds()
	if !p.offsetBad {
		if was {
			p.bad(mono) // healthy from now on: hold-down counts from here
		}
		return p.Tick(mono)
	}
	p.bad(mono)
	if was {
		return nil
	}
	e := p.stepdownEvent(stepdown.ReasonOffset, mono)
	e.OffsetSeconds = stepdown.Float(seconds)
	e.Source = "chrony"
	e.Detail = fmt.Sprintf("system clock offset %s is over %s", time.Duration(seconds*float64(time.Second)), t.Threshold)
	return []Event{e}
}

// ErrorBound feeds the bound on the clock's error, in seconds, from source
// ("chrony", "kernel"); each source is judged on its own.
func (p *Policy) ErrorBound(seconds float64, source string, mono time.Duration) []Event {
	t := p.cfg.Triggers.ErrorBound
	if !t.Enabled {
		return p.Tick(mono)
	}
	was := p.errorBad[source]
	bad := math.IsNaN(seconds) || seconds > t.Threshold.Seconds()
	if !bad {
		if was {
			delete(p.errorBad, source)
			p.bad(mono)
		}
		return p.Tick(mono)
	}
	p.errorBad[source] = true
	p.bad(mono)
	if was {
		return nil
	}
	e := p.stepdownEvent(stepdown.ReasonErrorBound, mono)
	e.ErrorBoundSeconds = stepdown.Float(seconds)
	e.Source = source
	e.Detail = fmt.Sprintf("clock error bound %s from %s is over %s", time.Duration(seconds*float64(time.Second)), source, t.Threshold)
	return []Event{e}
}

// Suspend feeds a resume from suspend: the machine was suspended for d.
func (p *Policy) Suspend(d, mono time.Duration) []Event {
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
	if !p.cfg.Triggers.Unsynchronized.Enabled {
		return p.Tick(mono)
	}
	if synced {
		if p.unsyncFired[source] {
			p.bad(mono)
		}
		delete(p.unsyncSince, source)
		delete(p.unsyncFired, source)
		return p.Tick(mono)
	}
	if _, ok := p.unsyncSince[source]; !ok {
		p.unsyncSince[source] = mono
	}
	return p.Tick(mono)
}

// ProbeOK reports that the named probe produced a good reading. The first
// one takes the policy out of its starting state.
func (p *Policy) ProbeOK(name string, mono time.Duration) []Event {
	if p.probeFired[name] {
		p.bad(mono)
	}
	delete(p.probeFailSince, name)
	delete(p.probeFired, name)
	if p.state == stepdown.StateUnknown && p.reason == stepdown.ReasonStarting {
		if ev := p.Tick(mono); len(ev) > 0 || p.state != stepdown.StateUnknown {
			return ev
		}
		p.state, p.reason = stepdown.StateOK, ""
		return []Event{{Type: stepdown.TypeResume, State: stepdown.StateOK, Reason: stepdown.ReasonStarting, Epoch: p.epoch, Mono: mono, Detail: "clockwatch is watching the clock"}}
	}
	return p.Tick(mono)
}

// ProbeFailed reports that the named probe failed.
func (p *Policy) ProbeFailed(name string, err error, mono time.Duration) []Event {
	if !p.cfg.Triggers.ProbeLost.Enabled {
		return p.Tick(mono)
	}
	if _, ok := p.probeFailSince[name]; !ok {
		p.probeFailSince[name] = mono
	}
	return p.Tick(mono)
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
// ends. The server calls it at least once per heartbeat.
func (p *Policy) Tick(mono time.Duration) []Event {
	var out []Event
	tr := p.cfg.Triggers
	out = p.expireGrace(out, mono, tr.Unsynchronized, p.unsyncSince, p.unsyncFired, stepdown.ReasonUnsynchronized,
		func(src string, d time.Duration) string {
			return fmt.Sprintf("%s has reported the clock unsynchronised for %s", src, d)
		})
	out = p.expireGrace(out, mono, tr.ProbeLost, p.probeFailSince, p.probeFired, stepdown.ReasonProbeLost,
		func(name string, d time.Duration) string { return fmt.Sprintf("probe %s has failed for %s", name, d) })
	if p.offsetBad || len(p.errorBad) > 0 {
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
	if p.conditionActive() || mono-p.lastBad < p.cfg.HoldDown {
		return out
	}
	ended := p.reason
	p.state, p.reason = stepdown.StateOK, ""
	out = append(out, Event{Type: stepdown.TypeResume, State: stepdown.StateOK, Reason: ended, Epoch: p.epoch, Mono: mono,
		Detail: fmt.Sprintf("clock healthy for %s", p.cfg.HoldDown)})
	return out
}

func (p *Policy) conditionActive() bool {
	return p.offsetBad || len(p.errorBad) > 0 || len(p.unsyncFired) > 0 || len(p.probeFired) > 0
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

func sortedKeys(m map[string]time.Duration) []string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	return keys
}

// expireGrace handles a trigger with a grace period, kept per source: a
// source bad for longer than the grace holds the state down, and its first
// such Tick announces a stepdown.
func (p *Policy) expireGrace(out []Event, mono time.Duration, g Grace, since map[string]time.Duration,
	fired map[string]bool, reason stepdown.Reason, detail func(src string, d time.Duration) string) []Event {
	for _, src := range sortedKeys(since) {
		d := mono - since[src]
		if !g.Enabled || d <= g.Grace {
			continue
		}
		p.bad(mono)
		if !fired[src] {
			fired[src] = true
			e := p.stepdownEvent(reason, mono)
			e.Source = src
			e.Detail = detail(src, d)
			out = append(out, e)
		}
	}
	return out
}
