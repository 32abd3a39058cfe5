package policy

import (
	"errors"
	"time"

	"github.com/clockwatch/clockwatch/internal/timesource"
	"github.com/clockwatch/clockwatch/stepdown"
)

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
