package timesyncd

import (
	"context"
	"fmt"
	"time"

	"github.com/clockwatch/clockwatch/internal/timesource"
)

// Lines are timesyncd's lines for `clockwatch status`. An absent timesyncd
// that is not pinned has none: absent raises nothing.
func Lines(s Snapshot, now time.Time) []timesource.Line {
	if s.Polls == 0 || (s.Absent() && !s.Found) {
		return nil
	}
	line := func(label, format string, args ...any) timesource.Line {
		return timesource.Line{Label: label, Value: fmt.Sprintf(format, args...)}
	}
	if !s.Up && !s.HaveData {
		return []timesource.Line{line("timesyncd", "%v", s.Err)}
	}
	sync := "no"
	if s.Synchronized(now) {
		sync = "yes"
	}
	out := []timesource.Line{line("timesyncd", "%s; synchronised: %s", s.Detail(now), sync)}
	if !s.Up {
		out = append(out, line("  read error", "%v (figures from %s ago)", s.Err, now.Sub(s.LastSuccess).Round(time.Second)))
	}
	if !s.HaveData {
		return out
	}
	m := s.Props.Message
	how := "slewing"
	switch {
	case m.Spike:
		how = "ignored as a spike"
	case m.Stepped():
		how = "stepped"
	}
	out = append(out,
		line("  sample offset", "%+.9f seconds (positive: this clock is ahead; %s)", m.Offset().Seconds(), how),
		line("  delay", "%.9f seconds", m.Delay().Seconds()),
		line("  root delay", "%.9f seconds, root dispersion %.9f seconds", m.RootDelay.Seconds(), m.RootDispersion.Seconds()),
		line("  error bound", "%.9f seconds", s.ErrorBound(now).Seconds()),
		line("  poll interval", "%s, reference %s, leap %d, %d replies", s.Props.PollInterval, m.RefIDString(), m.Leap, m.PacketCount),
		line("  frequency", "%+.3f ppm", s.Props.Frequency*1e6),
	)
	return out
}

// PollOnce reads timesyncd once, as the daemon's poller would, for one-shot
// commands (`clockwatch status`).
func PollOnce(ctx context.Context, cfg Config) Snapshot {
	p := NewPoller(cfg, nil)
	defer p.bus.Close()
	p.Poll(ctx)
	return p.Snapshot()
}

// StatusOnce reads timesyncd once and returns its reading and status
// lines, for `clockwatch status` (a timesource.StatusFunc); ok is false
// when it is off, or absent and not pinned (nothing to say).
func StatusOnce(ctx context.Context, cfg Config, host timesource.Host) (timesource.Status, bool) {
	if !cfg.On() {
		return timesource.Status{}, false
	}
	s := PollOnce(ctx, cfg.Resolve(host.Env))
	st := timesource.Status{Reading: s.Reading(host.Now), Lines: Lines(s, host.Now)}
	return st, len(st.Lines) > 0
}
