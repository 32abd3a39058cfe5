package policy

import (
	"fmt"
	"time"

	"github.com/clockwatch/clockwatch/stepdown"
)

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
