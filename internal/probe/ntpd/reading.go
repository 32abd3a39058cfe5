package ntpd

import (
	"errors"
	"fmt"
	"strconv"
	"time"

	"github.com/clockwatch/clockwatch/internal/timesource"
)

// SourceName is the name ntpd's readings are filed under.
const SourceName = "ntpd"

// Reading returns the snapshot as the normalised reading health and the
// stepdown policy judge: ntpd's leap indicator and stratum say whether the
// clock is synchronised.
func (s Snapshot) Reading() timesource.Reading {
	r := s.Tally.Reading(SourceName, timesource.Authoritative, s.Found || s.HaveData, s.HaveData, errNoAnswer)
	if !s.HaveData {
		return r
	}
	sys := s.Data.System
	r.Synchronized = sys.Synchronised()
	r.SetFigures(timesource.NTPFigures(SourceName, sys.Offset, sys.RootDispersion, sys.RootDelay))
	r.Leap = timesource.Leap(sys.Leap & 3)
	r.Detail = "stratum " + strconv.Itoa(sys.Stratum)
	return r
}

// errNoAnswer is the reading's error when a poll failed without saying why.
var errNoAnswer = errors.New("ntpd did not answer")

// Reading returns the last poll's reading; it never waits on ntpd.
// Its role is ntpd.role. A reading older than the poll interval plus the
// poll's deadline (and timesource.StaleGrace) is a failed one: the poll is
// stuck, and what it last read is no evidence of health.
func (p *Poller) Reading() timesource.Reading {
	r := p.Snapshot().Reading()
	r.Role = p.cfg.SourceRole()
	return r.Stale(time.Now(), p.maxAge())
}

var _ timesource.Source = (*Poller)(nil)

// StatusLines are ntpd's lines in `clockwatch status`.
func (d Data) StatusLines() []timesource.Line {
	y := d.System
	peer := "none"
	for _, p := range d.Peers {
		if p.Selection == "sys.peer" || p.Selection == "pps.peer" {
			peer = fmt.Sprintf("%s (stratum %d, reach %03o)", p.Address, p.Stratum, p.Reach)
		}
	}
	return []timesource.Line{
		{Label: "ntpd", Value: fmt.Sprintf("%s, stratum %d, reference %s, leap %s, synchronised %v", y.Version, y.Stratum, y.RefID, timesource.Leap(y.Leap&3), y.Synchronised())},
		{Label: "ntpd offset", Value: fmt.Sprintf("%+.9f seconds (positive: this clock is ahead)", y.Offset)},
		{Label: "ntpd bound", Value: fmt.Sprintf("%.9f seconds (|offset| + root dispersion %.9f + root delay %.9f / 2)", y.ErrorBound(), y.RootDispersion, y.RootDelay)},
		{Label: "ntpd sys.peer", Value: fmt.Sprintf("%s, %d associations", peer, len(d.Peers))},
	}
}
