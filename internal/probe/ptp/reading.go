package ptp

import (
	"fmt"
	"strconv"
	"strings"
	"time"

	"github.com/clockwatch/clockwatch/internal/timesource"
	"github.com/facebook/time/ptp/protocol"
)

// SourceName is the source's name in readings, metrics and verdicts.
const SourceName = "ptp4l"

var _ timesource.Source = (*Poller)(nil)

// Reading implements timesource.Source, from the last result.
//
// A reading older than the poll interval plus the poll's deadline (one poll
// interval) and timesource.StaleGrace is a failed one: the poll is stuck.
func (p *Poller) Reading() timesource.Reading {
	return p.Snapshot().Reading().Stale(time.Now(), 2*p.cfg.PollInterval+timesource.StaleGrace)
}

// Reading normalises the snapshot.
//
// A slave (port SLAVE or UNCALIBRATED, following another grandmaster) has
// data: Offset is ptp4l's offsetFromMaster, this clock minus the master's,
// the sign timesource wants. It is synchronised only in SLAVE: UNCALIBRATED
// measures but has not locked (a free-running servo never leaves it).
//
// ErrorBound is |offset| + meanPathDelay + the grandmaster's announced
// accuracy. PTP computes the offset assuming the path is symmetric; if all
// of the round trip were in one direction the true offset would differ by
// half the round trip, and meanPathDelay already is half the round trip
// (the one-way mean), so it enters whole: this is NTP's |offset| + delay/2
// with delay the round trip. The grandmaster's clockAccuracy adds its own
// error against true time, as root dispersion does for NTP; an unknown
// accuracy (0xFE) adds nothing, and boundary clocks between (StepsRemoved
// > 1) add error this clock cannot see.
//
// A grandmaster (port MASTER, the grandmaster identity its own) has offset
// 0 by definition; it is synchronised when it says its time is traceable or
// its clock class is 6, 7, 13 or 14 (locked to a primary reference, or in
// holdover within specification), and its error bound is its own announced
// accuracy.
//
// With hardware timestamping the offset is the PHC's; the system clock
// follows it through phc2sys, whose offset ptp4l does not know (Detail
// says so).
func (s Snapshot) Reading() timesource.Reading {
	r := s.Tally.Reading(SourceName, timesource.Authoritative, s.Found, false, nil)
	r.Leap, r.Grandmaster = timesource.LeapUnsynchronized, s.Grandmaster
	if !s.HaveData {
		return r
	}
	d := s.Data
	sol := d.Solution()
	r.HasData, r.Synchronized, r.Offset, r.ErrorBound = sol.HasData, sol.Synchronized, sol.Offset, sol.ErrorBound
	if r.Synchronized {
		switch {
		case d.Time.Leap61:
			r.Leap = timesource.LeapInsert
		case d.Time.Leap59:
			r.Leap = timesource.LeapDelete
		default:
			r.Leap = timesource.LeapNone
		}
	}
	r.Detail = detail(d)
	return r
}

// Solution is the time solution a reading of ptp4l describes, judged as
// Snapshot.Reading says.
type Solution struct {
	HasData, Synchronized bool
	Offset, ErrorBound    time.Duration
}

// Solution judges the data (see Snapshot.Reading); it does not allocate, so
// the exporter calls it on every scrape.
func (d Data) Solution() Solution {
	var sol Solution
	switch st := d.State(); {
	case (st == protocol.PortStateMaster || st == protocol.PortStateGrandMaster) && d.Grandmaster():
		sol.HasData = true
		sol.Synchronized = d.Time.TimeTraceable || primaryClass(d.ClockClass)
		sol.ErrorBound = Accuracy(d.ClockAccuracy)
	case (st == protocol.PortStateSlave || st == protocol.PortStateUncalibrated) && d.GrandmasterPresent:
		sol.HasData = true
		sol.Synchronized = st == protocol.PortStateSlave
		sol.Offset = d.OffsetFromMaster
		// Saturating: ptp4l's figures are 64-bit scaled nanoseconds, and a
		// wrapped sum would read as a small bound.
		sol.ErrorBound = timesource.Sum(timesource.Abs(d.OffsetFromMaster), timesource.Abs(d.MeanPathDelay), Accuracy(d.GrandmasterClockAccuracy))
	}
	return sol
}

// primaryClass reports whether a clock class means time from a primary
// reference (IEEE 1588-2019 table 4: 6 and 13 locked, 7 and 14 holdover
// within specification).
func primaryClass(c uint8) bool { return c == 6 || c == 7 || c == 13 || c == 14 }

// Accuracy is the bound of a clockAccuracy value (IEEE 1588-2019 table 5);
// 0 when it is unknown (0xFE) or reserved.
func Accuracy(a uint8) time.Duration {
	if a < 0x17 || a > 0x31 {
		return 0
	}
	return protocol.ClockAccuracy(a).Duration()
}

// detail is the reading's one-line state: "port SLAVE, grandmaster
// 001122.fffe.334455 class 6, 1 step, software timestamps".
func detail(d Data) string {
	var b strings.Builder
	b.WriteString("port ")
	b.WriteString(StateName(d.State()))
	if d.Grandmaster() {
		fmt.Fprintf(&b, ", grandmaster itself class %d", d.ClockClass)
	} else {
		fmt.Fprintf(&b, ", grandmaster %s class %d, %d step", d.GrandmasterIdentity, d.GrandmasterClockClass, d.StepsRemoved)
		if d.StepsRemoved != 1 {
			b.WriteString("s")
		}
	}
	if d.SoftwareTimestamping() {
		b.WriteString(", software timestamps")
	} else if len(d.Ports) > 0 {
		b.WriteString(", hardware timestamps: the offset is the PHC's (phc2sys not visible)")
	}
	return b.String()
}

// StateName names a port state as ptp4l does, or by number.
func StateName(s protocol.PortState) string {
	if n := s.String(); n != "" {
		return n
	}
	if s == 0 {
		return "NONE"
	}
	return "STATE_" + strconv.Itoa(int(s))
}
