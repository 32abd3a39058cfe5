package chrony

import (
	"errors"
	"fmt"
	"time"

	"github.com/clockwatch/clockwatch/internal/timesource"
)

// SourceName is the name chronyd's readings are filed under.
const SourceName = "chrony"

// Reading returns the snapshot as the normalised reading health and the
// stepdown policy judge. chronyd's own status says whether the clock is
// synchronised: its leap status, and whether any source is selectable. When
// every source is lost chronyd logs "Can't synchronise: no selectable
// sources" but keeps leap status normal for good (chrony 4.3's reference.c
// unsynchronises only on an unknown step or a fallback drift), so the leap
// status alone would never say that the server went away.
func (s Snapshot) Reading() timesource.Reading {
	r := s.Tally.Reading(SourceName, timesource.Authoritative, s.HaveData || s.Answered, s.HaveData, errNoAnswer)
	if !s.HaveData {
		return r
	}
	t := s.Data.Tracking
	d := s.Data
	r.Synchronized = t.Synchronised() && (len(d.Sources) == 0 || d.SelectableSources() > 0)
	r.SetFigures(timesource.NTPFigures(SourceName, t.SystemOffset, t.RootDispersion, t.RootDelay))
	r.Leap = leapOf(t.Leap)
	r.Detail = "leap status " + t.Leap.String()
	if len(d.Sources) > 0 && d.SelectableSources() == 0 {
		r.Detail += ", no selectable source"
	}
	return r
}

// Notes are the audit's findings and what chronyd's sources show, for
// health and `clockwatch status`.
func (s Snapshot) Notes() []timesource.Note {
	var ns []timesource.Note
	if s.Up && s.HaveData && len(s.Data.Sources) > 0 && s.Data.SelectableSources() == 0 {
		ns = append(ns, timesource.Note{Warning: true, Label: "chronyd",
			Text: noneSelectable(len(s.Data.Sources))})
	}
	if s.AuditErr != nil {
		ns = append(ns, timesource.Note{Warning: true, Label: "chrony.conf", Text: "Cannot audit chrony's configuration: " + s.AuditErr.Error() + "."})
	}
	if s.Audit != nil {
		ns = append(ns, AuditNotes(s.Audit.Findings())...)
	}
	return ns
}

// noneSelectable says that none of chronyd's n sources is selectable.
func noneSelectable(n int) string {
	if n == 1 {
		return "chronyd's only source is not selectable"
	}
	return fmt.Sprintf("chronyd has %d sources and none is selectable", n)
}

// AuditNotes turns the chrony.conf audit's findings into notes.
func AuditNotes(fs []Finding) []timesource.Note {
	ns := make([]timesource.Note, 0, len(fs))
	for _, f := range fs {
		ns = append(ns, timesource.Note{Warning: f.Warning, Label: "chrony.conf", Text: f.Text})
	}
	return ns
}

// StatusLines are chronyd's state for `clockwatch status`.
func (d Data) StatusLines() []timesource.Line {
	tr := d.Tracking
	return []timesource.Line{
		{Label: "chronyd", Value: fmt.Sprintf("reference %s (%s), stratum %d, leap %s", tr.RefName, tr.Address, tr.Stratum, tr.Leap)},
		{Label: "System offset", Value: fmt.Sprintf("%+.9f seconds (positive: this clock is ahead)", tr.SystemOffset)},
		{Label: "Last offset", Value: fmt.Sprintf("%+.9f seconds", tr.LastOffset)},
		{Label: "RMS offset", Value: fmt.Sprintf("%.9f seconds", tr.RMSOffset)},
		{Label: "chronyd freq.", Value: fmt.Sprintf("%+.3f ppm (how fast this clock would run without chronyd; positive: fast)", tr.Frequency*1e6)},
		{Label: "Root delay", Value: fmt.Sprintf("%.9f seconds", tr.RootDelay)},
		{Label: "Root dispersion", Value: fmt.Sprintf("%.9f seconds", tr.RootDispersion)},
		{Label: "Sources", Value: fmt.Sprintf("%d, %d selectable", len(d.Sources), d.SelectableSources())},
	}
}

// Reading returns the last poll's reading; it never waits on chronyd.
// Its role is chrony.role. A reading older than the longest wait between
// polls plus the poll's deadline (and timesource.StaleGrace) is a failed
// one: the poll is stuck, and what it last read is no evidence of health.
func (p *Poller) Reading() timesource.Reading {
	r := p.Snapshot().Reading()
	r.Role = p.cfg.SourceRole()
	return r.Stale(time.Now(), p.maxAge())
}

// Notes implements timesource.Noter, from the last result.
func (p *Poller) Notes() []timesource.Note { return p.Snapshot().Notes() }

var _ timesource.Noter = (*Poller)(nil)

var errNoAnswer = errors.New("chronyd did not answer")

var _ timesource.Source = (*Poller)(nil)

func leapOf(l Leap) timesource.Leap {
	switch l {
	case LeapInsertSecond:
		return timesource.LeapInsert
	case LeapDeleteSecond:
		return timesource.LeapDelete
	case LeapUnsynchronised:
		return timesource.LeapUnsynchronized
	}
	return timesource.LeapNone
}
