package ptp

import (
	"context"
	"fmt"
	"time"

	"github.com/clockwatch/clockwatch/internal/timesource"
)

// Lines are ptp4l's lines for `clockwatch status`; none when ptp4l is
// absent (never found by "auto").
func Lines(s Snapshot, now time.Time) []timesource.Line {
	if !s.Found {
		return nil
	}
	line := func(label, format string, args ...any) timesource.Line {
		return timesource.Line{Label: label, Value: fmt.Sprintf(format, args...)}
	}
	var out []timesource.Line
	if !s.HaveData {
		return append(out, line("ptp4l", "no answer from %s: %v", s.Address, s.Err))
	}
	d := s.Data
	r := s.Reading()
	sync := "no"
	if r.Synchronized {
		sync = "yes"
	}
	since := "" // a single poll (clockwatch status) cannot say for how long
	if s.Polls > 1 {
		since = " for " + now.Sub(s.StateSince).Round(time.Second).String()
	}
	out = append(out, line("ptp4l", "port %s%s, synchronised %s, domain %d", StateName(s.State), since, sync, d.Domain))
	if !s.Up {
		out = append(out, line("ptp4l error", "%v (figures below are %s old)", s.Err, now.Sub(s.LastSuccess).Round(time.Second)))
	}
	if d.Grandmaster() {
		out = append(out, line("PTP grandmaster", "this clock %s, class %d, accuracy %s", d.ClockIdentity, d.ClockClass, accuracyText(d.ClockAccuracy)))
	} else {
		out = append(out, line("PTP grandmaster", "%s, class %d, accuracy %s, %d steps removed", d.GrandmasterIdentity, d.GrandmasterClockClass, accuracyText(d.GrandmasterClockAccuracy), d.StepsRemoved))
		out = append(out, line("PTP offset", "%+.9f seconds (positive: this clock is ahead), mean path delay %.9f seconds", d.OffsetFromMaster.Seconds(), d.MeanPathDelay.Seconds()))
	}
	if s.GrandmasterChanges > 0 {
		out = append(out, line("PTP gm changes", "%d, last %s ago (was %s)", s.GrandmasterChanges, now.Sub(s.GrandmasterChangedAt).Round(time.Second), s.PreviousGrandmaster))
	}
	out = append(out, line("PTP time", "traceable %v, TAI−UTC %ds (valid %v), leap61 %v, leap59 %v", d.Time.TimeTraceable, d.Time.CurrentUTCOffset, d.Time.UTCOffsetValid, d.Time.Leap61, d.Time.Leap59))
	for _, p := range d.Ports {
		out = append(out, line("PTP port", "%d %s %s, %s timestamps", p.Number, p.Interface, StateName(p.State), p.Timestamping))
	}
	return out
}

// StatusOnce polls ptp4l once for `clockwatch status` (a
// timesource.StatusFunc) and returns its reading and status lines. ok is
// false, and there is nothing to add, when ptp4l is off, or absent under
// "auto".
func StatusOnce(ctx context.Context, cfg Config, host timesource.Host) (timesource.Status, bool) {
	if !cfg.On() {
		return timesource.Status{}, false
	}
	p := NewPoller(cfg, nil)
	defer p.client.Close()
	ctx, cancel := context.WithTimeout(ctx, 2*cfg.Timeout)
	defer cancel()
	p.Poll(ctx)
	s := p.Snapshot()
	if !s.Found {
		return timesource.Status{Reading: s.Reading()}, false
	}
	return timesource.Status{Reading: s.Reading(), Lines: Lines(s, host.Now)}, true
}

func accuracyText(a uint8) string {
	if d := Accuracy(a); d > 0 {
		return "within " + d.String()
	}
	return fmt.Sprintf("unknown (%#02x)", a)
}
