package ntpd

import (
	"context"
	"fmt"
	"log/slog"
	"time"

	"github.com/clockwatch/clockwatch/internal/loop"
	"github.com/clockwatch/clockwatch/internal/timesource"
)

// Snapshot is the poller's last result.
type Snapshot struct {
	// Found is true once ntpd has answered in this process, or when its
	// address is pinned: an ntpd that "auto" never found is absent.
	Found bool
	// Data is the last successful reading; HaveData reports whether there
	// was one.
	Data     Data
	HaveData bool
	// Tally counts the polls; its LastSuccess is when Data was read.
	loop.Tally
}

// Poller reads ntpd on its own interval and keeps the last result. It is a
// task: Run it under the daemon's errgroup.
type Poller struct {
	cfg    Config
	client *Client
	logger *slog.Logger
	snap   loop.Latest[Snapshot]
}

// NewPoller returns a poller for the configured ntpd.
func NewPoller(cfg Config, logger *slog.Logger) *Poller {
	if logger == nil {
		logger = slog.New(slog.DiscardHandler)
	}
	p := &Poller{cfg: cfg, client: NewClient(cfg.HostPort(), cfg.Timeout), logger: logger}
	p.snap.Update(func(s *Snapshot) { s.Found = cfg.Address != AddressAuto || cfg.Pinned() })
	return p
}

// Snapshot returns the last result; it never waits on ntpd.
func (p *Poller) Snapshot() Snapshot { return p.snap.Load() }

// Close closes the connection of a poller polled without Run (`clockwatch
// status`); Run closes its own.
func (p *Poller) Close() error { return p.client.Close() }

// Run polls until ctx is done.
func (p *Poller) Run(ctx context.Context) error {
	defer p.client.Close()
	loop.Next(ctx, func(ctx context.Context) time.Duration {
		p.Poll(ctx)
		return loop.Wait(p.Snapshot().Found, p.cfg.PollInterval)
	})
	return nil
}

// maxAge is how old a good reading may be: a wait of one poll interval,
// then a poll that may take up to its deadline (one poll interval).
func (p *Poller) maxAge() time.Duration { return 2*p.cfg.PollInterval + timesource.StaleGrace }

// Poll reads ntpd once and publishes the result; a change between up and
// down is logged once. Under "auto", until ntpd first answers, a failure is
// absence: not a poll, not logged, its error wrapping timesource.ErrAbsent.
func (p *Poller) Poll(ctx context.Context) {
	// The whole poll ends within one poll interval, whatever the number
	// of associations: each request's timeout alone let a slow ntpd with
	// 300 associations keep one poll going for minutes.
	d, start, end, err := loop.Timed(ctx, p.cfg.PollInterval, time.Now, p.client.Poll)
	var wasUp bool
	s := p.snap.Update(func(snap *Snapshot) {
		// An answer that means nothing is an ntpd that answered: found, and
		// failing (absent, it would raise nothing and the start say ok).
		if err != nil && !snap.Found && !Answered(err) {
			snap.Err = timesource.Absent(fmt.Errorf("ntpd is absent: no mode 6 answer on %s: %w", DefaultAddress, err))
			return
		}
		snap.Found = true
		wasUp = snap.Count(start, end, err)
		if err == nil {
			snap.Data, snap.HaveData = d, true
		}
	})
	if !s.Found {
		return
	}
	switch {
	case err != nil && wasUp:
		p.logger.Error("cannot read ntpd", "err", err)
	case err == nil && s.Polls == 1:
		p.logger.Info("ntpd answers", "address", p.cfg.HostPort())
	case err == nil && !wasUp:
		p.logger.Info("ntpd answers again", "address", p.cfg.HostPort())
	}
}
