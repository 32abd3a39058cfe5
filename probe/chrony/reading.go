package chrony

import (
	"errors"
	"time"

	"github.com/clockwatch/clockwatch/timesource"
)

// SourceName is the name chronyd's readings are filed under.
const SourceName = "chrony"

// Reading returns the snapshot as the normalised reading health and the
// stepdown policy judge: chronyd's own leap status says whether the clock is
// synchronised.
func (s Snapshot) Reading() timesource.Reading {
	r := timesource.Reading{Source: SourceName, Role: timesource.Authoritative, Found: s.HaveData, Up: s.Up,
		Err: s.Err, HasData: s.HaveData, LastSuccess: s.LastSuccess}
	if s.Polls > 0 && !s.Up && r.Err == nil {
		r.Err = errNoAnswer
	}
	if !s.HaveData {
		return r
	}
	t := s.Data.Tracking
	r.Synchronized = t.Synchronised()
	r.Offset = time.Duration(t.SystemOffset * float64(time.Second))
	r.ErrorBound = time.Duration(t.ErrorBound() * float64(time.Second))
	r.Leap = leapOf(t.Leap)
	r.Detail = "leap status " + t.Leap.String()
	return r
}

// Reading returns the last poll's reading; it never waits on chronyd.
func (p *Poller) Reading() timesource.Reading { return p.Snapshot().Reading() }

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
