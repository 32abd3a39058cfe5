package ntpd

import (
	"errors"
	"strconv"
	"time"

	"github.com/clockwatch/clockwatch/timesource"
)

// SourceName is the name ntpd's readings are filed under.
const SourceName = "ntpd"

// Reading returns the snapshot as the normalised reading health and the
// stepdown policy judge: ntpd's leap indicator and stratum say whether the
// clock is synchronised.
func (s Snapshot) Reading() timesource.Reading {
	r := timesource.Reading{Source: SourceName, Role: timesource.Authoritative, Found: s.HaveData, Up: s.Up,
		Err: s.Err, HasData: s.HaveData, LastSuccess: s.LastSuccess}
	if s.Polls > 0 && !s.Up && r.Err == nil {
		r.Err = errors.New("ntpd did not answer")
	}
	if !s.HaveData {
		return r
	}
	sys := s.Data.System
	r.Synchronized = sys.Synchronised()
	r.Offset = time.Duration(sys.Offset * float64(time.Second))
	r.ErrorBound = time.Duration(sys.ErrorBound() * float64(time.Second))
	r.Leap = timesource.Leap(sys.Leap & 3)
	r.Detail = "stratum " + strconv.Itoa(sys.Stratum)
	return r
}

// Reading returns the last poll's reading; it never waits on ntpd.
// Its role is ntpd.role.
func (p *Poller) Reading() timesource.Reading {
	r := p.Snapshot().Reading()
	r.Role = p.cfg.SourceRole()
	return r
}

var _ timesource.Source = (*Poller)(nil)
