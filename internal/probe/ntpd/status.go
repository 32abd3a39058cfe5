package ntpd

import (
	"context"

	"github.com/clockwatch/clockwatch/internal/timesource"
)

// StatusOnce asks ntpd once, as the daemon's poller would, for `clockwatch
// status` (a timesource.StatusFunc): its reading and status lines. ok is
// false, and there is nothing to add, when ntpd is off or, under "auto",
// absent.
func StatusOnce(ctx context.Context, cfg Config, _ timesource.Host) (st timesource.Status, ok bool) {
	if !cfg.On() {
		return st, false
	}
	p := NewPoller(cfg, nil)
	defer p.Close()
	ctx, cancel := context.WithTimeout(ctx, 2*cfg.Timeout)
	defer cancel()
	p.Poll(ctx)
	s := p.Snapshot()
	st.Reading = p.Reading()
	if st.Reading.IsAbsent() {
		return st, false
	}
	if s.HaveData {
		st.Lines = s.Data.StatusLines()
	}
	return st, true
}
