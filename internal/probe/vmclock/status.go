package vmclock

import (
	"context"
	"fmt"
	"strings"

	"github.com/clockwatch/clockwatch/internal/timesource"
)

// StatusOnce reads the page once for `clockwatch status` (a
// timesource.StatusFunc; a read does not wait, so ctx is not needed):
// nothing (ok false) when the source is off or, in mode auto, the device is
// absent.
func StatusOnce(_ context.Context, cfg Config, _ timesource.Host) (st timesource.Status, ok bool) {
	if !cfg.On() {
		return st, false
	}
	p := NewPoller(cfg, nil, Options{})
	p.Poll()
	if p.dev != nil {
		defer p.dev.Close()
	}
	s := p.Snapshot()
	st.Reading = s.Reading()
	if st.Reading.IsAbsent() {
		return st, false
	}
	st.Lines = Lines(s)
	return st, true
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
