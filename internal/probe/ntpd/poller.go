package ntpd

import (
	"context"
	"fmt"
	"log/slog"
	"sync"
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
	// Up reports whether the last poll succeeded; Err is why it failed.
	Up  bool
	Err error
	// LastSuccess is when the data was read (monotonic reading included).
	LastSuccess time.Time
	// PollDuration is how long the last poll took.
	PollDuration time.Duration
	// Polls and Failures count polls since the start.
	Polls, Failures uint64
}

// Poller reads ntpd on its own interval and keeps the last result. It is a
// task: Run it under the daemon's errgroup.
type Poller struct {
	cfg    Config
	client *Client
	logger *slog.Logger

	mu   sync.RWMutex
	snap Snapshot
}

// NewPoller returns a poller for the configured ntpd.
func NewPoller(cfg Config, logger *slog.Logger) *Poller {
	if logger == nil {
		logger = slog.New(slog.DiscardHandler)
	}
	p := &Poller{cfg: cfg, client: NewClient(cfg.HostPort(), cfg.Timeout), logger: logger}
	p.snap.Found = cfg.Address != AddressAuto
	return p
}

// Snapshot returns the last result; it never waits on ntpd.
func (p *Poller) Snapshot() Snapshot {
	p.mu.RLock()
	defer p.mu.RUnlock()
	return p.snap
}

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
	start := time.Now()
	// The whole poll ends within one poll interval, whatever the number
	// of associations: each request's timeout alone let a slow ntpd with
	// 300 associations keep one poll going for minutes.
	ctx, cancel := context.WithTimeout(ctx, p.cfg.PollInterval)
	d, err := p.client.Poll(ctx)
	cancel()
	end := time.Now()
	p.mu.Lock()
	// An answer that means nothing is an ntpd that answered: found, and
	// failing (absent, it would raise nothing and the start say ok).
	if err != nil && !p.snap.Found && !Answered(err) {
		p.snap.Err = timesource.Absent(fmt.Errorf("ntpd is absent: no mode 6 answer on %s: %w", DefaultAddress, err))
		p.mu.Unlock()
		return
	}
	s := p.snap
	s.Found = true
	wasUp := s.Up || s.Polls == 0
	s.Polls++
	s.PollDuration = end.Sub(start)
	s.Up, s.Err = err == nil, err
	if err != nil {
		s.Failures++
	} else {
		s.Data, s.HaveData, s.LastSuccess = d, true, end
	}
	p.snap = s
	p.mu.Unlock()
	switch {
	case err != nil && wasUp:
		p.logger.Error("cannot read ntpd", "err", err)
	case err == nil && s.Polls == 1:
		p.logger.Info("ntpd answers", "address", p.cfg.HostPort())
	case err == nil && !wasUp:
		p.logger.Info("ntpd answers again", "address", p.cfg.HostPort())
	}
}
