package vmclock

import (
	"fmt"
	"strings"

	"github.com/clockwatch/clockwatch/internal/timesource"
)

// StatusOnce reads the page once for `clockwatch status`: nothing (ok
// false) when the source is off or, in mode auto, the device is absent.
func StatusOnce(cfg Config) (r timesource.Reading, lines []timesource.Line, ok bool) {
	if !cfg.Enabled() {
		return r, nil, false
	}
	p := NewPoller(cfg, nil, Options{})
	p.Poll()
	if p.dev != nil {
		defer p.dev.Close()
	}
	s := p.Snapshot()
	r = s.Reading()
	if r.IsAbsent() {
		return r, nil, false
	}
	return r, Lines(s), true
}

// Lines is the snapshot's state as `clockwatch status` prints it.
func Lines(s Snapshot) []timesource.Line {
	if !s.Up {
		return []timesource.Line{{Label: "VMClock", Value: fmt.Sprintf("not readable: %v", s.Err)}}
	}
	p := s.Page
	lines := []timesource.Line{
		{Label: "VMClock", Value: fmt.Sprintf("disruption marker %d, clock %s", p.DisruptionMarker, p.ClockStatus)},
	}
	var notes []string
	if p.Flags&FlagDisruptionImminent != 0 {
		notes = append(notes, "a disruption is imminent (about an hour)")
	} else if p.Flags&FlagDisruptionSoon != 0 {
		notes = append(notes, "a disruption is coming (about a day)")
	}
	if p.LeapIndicator != LeapNone {
		notes = append(notes, "leap "+p.LeapIndicator.String())
	}
	if d, ok := p.MaxError(); ok && p.HasTime() {
		notes = append(notes, fmt.Sprintf("time max error %s", d))
	}
	if len(notes) > 0 {
		lines = append(lines, timesource.Line{Label: "VMClock notes", Value: strings.Join(notes, "; ")})
	}
	return lines
}
