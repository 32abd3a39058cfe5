package ntpd

import (
	"context"

	"github.com/clockwatch/clockwatch/internal/timesource"
)

// StatusOnce asks ntpd once, as the daemon's poller would, for `clockwatch
// status`: its reading and status lines. ok is false, and there is nothing
// to add, when ntpd is off or, under "auto", absent.
func StatusOnce(ctx context.Context, cfg Config) (r timesource.Reading, lines []timesource.Line, ok bool) {
	if !cfg.Enabled {
		return r, nil, false
	}
	p := NewPoller(cfg, nil)
	defer p.Close()
	ctx, cancel := context.WithTimeout(ctx, 2*cfg.Timeout)
	defer cancel()
	p.Poll(ctx)
	s := p.Snapshot()
	r = p.Reading()
	if r.IsAbsent() {
		return r, nil, false
	}
	if !s.HaveData {
		return r, nil, true
	}
	return r, s.Data.StatusLines(), true
}
