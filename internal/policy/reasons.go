package policy

import (
	"fmt"
	"math"
	"reflect"
	"strings"
	"time"

	"github.com/clockwatch/clockwatch/internal/timesource"
	"github.com/clockwatch/clockwatch/stepdown"
)

// Kind is how a trigger fires.
type Kind uint8

// The kinds of trigger.
const (
	// Instant triggers fire on one event (a step, a wake-up from suspend,
	// a grandmaster change): the hold-down counts from it.
	Instant Kind = iota + 1
	// Level triggers hold while a reading is over their threshold (an
	// offset, an error bound).
	Level
	// Graced triggers hold once their condition has lasted longer than
	// their grace (unsynchronised, a lost probe).
	Graced
)

// Setting is one trigger's configuration, whatever its kind: whether it is
// on and its magnitude (a threshold or a grace; none for a switch).
type Setting struct {
	Enabled bool
	// Limit is the threshold or the grace; Unit says which ("threshold",
	// "grace", or "" for a switch), as the YAML key below the trigger's.
	Limit time.Duration
	Unit  string
}

func (t *Threshold) setting() Setting { return Setting{t.Enabled, t.Threshold, "threshold"} }
func (g *Grace) setting() Setting     { return Setting{g.Enabled, g.Grace, "grace"} }
func (s *Switch) setting() Setting    { return Setting{Enabled: s.Enabled} }

func (t *Threshold) set(s Setting) { t.Enabled, t.Threshold = s.Enabled, s.Limit }
func (g *Grace) set(s Setting)     { g.Enabled, g.Grace = s.Enabled, s.Limit }
func (s *Switch) set(to Setting)   { s.Enabled = to.Enabled }

// Trigger is one row of the trigger table: everything clockwatch knows about
// one stepdown reason. Validation, reloads, grace periods, the events' text,
// the bounded-time segment's status and the wire's list of reasons all read
// it; Triggers holds each row's setting under the row's Key.
type Trigger struct {
	// Reason is the reason on the wire (stepdown.TriggerReasons lists the
	// same, in the same order; a test checks).
	Reason stepdown.Reason
	Kind   Kind
	// Key is the trigger's key under stepdown.triggers (and under a
	// source's own triggers, when PerSource).
	Key string
	// PerSource triggers are judged for each source on its own, and a
	// source may replace their settings with its own (ptp.triggers):
	// SourceTriggers holds those.
	PerSource bool
	// Disrupts says that the clock itself moved: the bounded-time segment
	// says "disrupted" (ClockBound's meaning), not "unknown", while the
	// stepdown holds for this reason.
	Disrupts bool
	// Default is the setting unless configured (DefaultTriggers; its
	// Unit is the field's, whatever the row says).
	Default Setting
	// text says what a condition of this reason means, for an event's
	// detail (detail is the source's last Detail, its port state).
	text func(c Condition, detail string) string
	// figure, for a level row with a threshold, is the figure of a
	// reading it compares with that threshold (none: of is nil): Reading
	// judges every such row (Level), in the table's order, with no method
	// of its own.
	figure figure
	// verdict, for a graced row that a reading raises whatever the
	// source's role (the fleet's majority judge), says whether reading r
	// decides anything (judged) and whether the condition holds (bad).
	verdict func(r timesource.Reading) (bad, judged bool)
}

// figure is what a level row compares with its threshold.
type figure struct {
	// name starts the event's detail: "<name> <figure> from <source> is
	// over <threshold>".
	name string
	// of is the figure of a reading, in seconds.
	of func(r timesource.Reading) float64
	// signed figures are judged by their magnitude, either way; the
	// others mean nothing below zero (a wrapped conversion), so such a
	// figure is over any threshold.
	signed bool
	// fallback says that a fallback's figure counts while no
	// authoritative source answers with a time solution (chronyd -x
	// leaves the kernel's maxerror saturated while its own bound is
	// microseconds); without it a fallback's figure is not judged.
	fallback bool
	// record sets the event's field that carries the figure.
	record func(e *Event, seconds float64)
}

// over says whether seconds is over limit for this figure. NaN always is.
func (f figure) over(seconds float64, limit time.Duration) bool {
	return math.IsNaN(seconds) || (!f.signed && seconds < 0) || math.Abs(seconds) > limit.Seconds()
}

// triggerTable is the table, in the protocol's order (a function, not a
// variable: no package state to mutate). A new reason is one row here, its
// constant and list entry in stepdown/wire.go, and its field in Triggers
// (and SourceTriggers when PerSource), whose YAML key is the row's Key; the
// tests fail until all agree. A level reason with a threshold says which
// figure of a reading it compares (figure), a graced one that any source's
// reading raises says how (verdict): Reading judges both from the row. Only
// an instant reason, or one whose input is not a reading, needs an input of
// its own (a method like Woke, fed by the daemon).
func triggerTable() [9]Trigger {
	return [...]Trigger{
		{Reason: stepdown.ReasonStep, Kind: Instant, Key: "step", Disrupts: true,
			Default: Setting{Enabled: true, Limit: time.Millisecond}},
		{Reason: stepdown.ReasonOffset, Kind: Level, Key: "offset", PerSource: true,
			Default: Setting{Enabled: true, Limit: time.Second},
			figure: figure{name: "system clock offset", signed: true,
				of:     func(r timesource.Reading) float64 { return r.Offset.Seconds() },
				record: func(e *Event, s float64) { e.OffsetSeconds = stepdown.Float(s) }}},
		{Reason: stepdown.ReasonUnsynchronized, Kind: Graced, Key: "unsynchronized", PerSource: true,
			Default: Setting{Enabled: true, Limit: 60 * time.Second},
			text: func(c Condition, detail string) string {
				what := fmt.Sprintf("%s reports the clock unsynchronised", c.Source)
				if detail != "" {
					what += " (" + detail + ")"
				}
				return what
			}},
		{Reason: stepdown.ReasonErrorBound, Kind: Level, Key: "error_bound", PerSource: true,
			Default: Setting{Enabled: true, Limit: time.Second},
			figure: figure{name: "clock error bound", fallback: true,
				of:     func(r timesource.Reading) float64 { return r.ErrorBound.Seconds() },
				record: func(e *Event, s float64) { e.ErrorBoundSeconds = stepdown.Float(s) }}},
		{Reason: stepdown.ReasonProbeLost, Kind: Graced, Key: "probe_lost",
			Default: Setting{Enabled: true, Limit: 10 * time.Second},
			text:    func(c Condition, _ string) string { return fmt.Sprintf("probe %s fails", c.Source) }},
		{Reason: stepdown.ReasonSuspend, Kind: Instant, Key: "suspend", Disrupts: true,
			Default: Setting{Enabled: true, Limit: time.Millisecond}},
		{Reason: stepdown.ReasonGrandmasterChanged, Kind: Instant, Key: "grandmaster_changed",
			Default: Setting{Enabled: true}},
		// A changed disruption marker fires at once; a clock the
		// hypervisor calls unreliable holds while it says so.
		{Reason: stepdown.ReasonVMDisruption, Kind: Instant, Key: "vm_disruption", Disrupts: true,
			Default: Setting{Enabled: true}},
		// The fleet's majority judge (the peers source) says this clock is
		// outside: graced, so that one round's verdict is not enough.
		{Reason: stepdown.ReasonPeerOffset, Kind: Graced, Key: "peer_offset",
			Default: Setting{Enabled: true, Limit: 10 * time.Second},
			// A judge that is down (fewer than two peers measured)
			// decides nothing: the condition stays as it was.
			verdict: func(r timesource.Reading) (bool, bool) { return r.OutsideFleet, r.JudgesFleet && r.Found && r.Up },
			text: func(c Condition, detail string) string {
				what := "this clock disagrees with the majority of its peers"
				if detail != "" {
					what += " (" + detail + ")"
				}
				return what
			}},
	}
}

// TriggerTable returns the table's rows, in the protocol's order.
func TriggerTable() []Trigger {
	t := triggerTable()
	return t[:]
}

// Lookup returns the row of reason r; ok is false for a reason that is no
// trigger's (drill, starting, or one this build does not know).
func Lookup(r stepdown.Reason) (t Trigger, ok bool) {
	for _, t := range triggerTable() {
		if t.Reason == r {
			return t, true
		}
	}
	return Trigger{}, false
}

// Disrupts reports whether a stepdown for r means that the clock itself
// moved, or a drill rehearses that: the bounded-time segment's
// "disrupted". The others (an offset, an error bound, unsynchronised, a
// lost probe, starting) say clockwatch cannot vouch for the clock:
// "unknown".
func Disrupts(r stepdown.Reason) bool {
	if r == stepdown.ReasonDrill {
		return true
	}
	t, ok := Lookup(r)
	return ok && t.Disrupts
}

// Setting returns the trigger's setting that judges source: a source's own
// (Triggers.Sources) for a PerSource row, else stepdown.triggers'.
func (t Trigger) Setting(ts Triggers, source string) Setting {
	if t.PerSource {
		if st, ok := ts.Sources[source]; ok {
			return t.source(st)
		}
	}
	return t.global(ts)
}

// global is the row's setting under stepdown.triggers.
func (t Trigger) global(ts Triggers) Setting {
	f, _ := settingField(reflect.ValueOf(&ts).Elem(), t.Key)
	return f.setting()
}

// source is a PerSource row's setting in a source's own triggers; the zero
// Setting for a row that is not.
func (t Trigger) source(st SourceTriggers) Setting {
	f, _ := settingField(reflect.ValueOf(&st).Elem(), t.Key)
	return f.setting()
}

// settings are the rows' settings under one configuration, resolved once
// (New, SetConfig) so that no input pays for finding them: global by
// reason, and the PerSource rows' of each source with its own.
type settings struct {
	global  map[stepdown.Reason]Setting
	sources map[string]map[stepdown.Reason]Setting
}

func resolve(ts Triggers) settings {
	s := settings{global: map[stepdown.Reason]Setting{}, sources: map[string]map[stepdown.Reason]Setting{}}
	for _, row := range triggerTable() {
		s.global[row.Reason] = row.global(ts)
		if !row.PerSource {
			continue
		}
		for name, st := range ts.Sources {
			if s.sources[name] == nil {
				s.sources[name] = map[stepdown.Reason]Setting{}
			}
			s.sources[name][row.Reason] = row.source(st)
		}
	}
	return s
}

// of returns the setting that judges condition c (Trigger.Setting's); ok is
// false for a reason that is no row's.
func (s settings) of(c Condition) (set Setting, ok bool) {
	if own, found := s.sources[c.Source][c.Reason]; found {
		return own, true
	}
	set, ok = s.global[c.Reason]
	return set, ok
}

// configurable is a trigger's configuration type: Threshold, Grace or
// Switch.
type configurable interface {
	setting() Setting
	set(Setting)
}

// settingField finds, in a Triggers or SourceTriggers (addressable), the
// field whose YAML key is key: the row's setting lives in the field its Key
// names, so the row needs no accessor. ok is false when none has that key
// (f is then a Switch that reads as off).
func settingField(v reflect.Value, key string) (f configurable, ok bool) {
	t := v.Type()
	for i := range t.NumField() {
		if k, _, _ := strings.Cut(t.Field(i).Tag.Get("yaml"), ","); k == key {
			if f, ok := v.Field(i).Addr().Interface().(configurable); ok {
				return f, true
			}
		}
	}
	return new(Switch), false
}

// Text says what condition c of this reason means, for an event's detail.
func (t Trigger) Text(c Condition, detail string) string {
	if t.text != nil {
		return t.text(c, detail)
	}
	return fmt.Sprintf("%s from %s", c.Reason, c.Source)
}
