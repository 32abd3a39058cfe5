package ntpd

import (
	"context"
	"log/slog"
	"sync"
	"time"
)

// Snapshot is the poller's last result.
type Snapshot struct {
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
	return &Poller{cfg: cfg, client: NewClient(cfg.Address, cfg.Timeout), logger: logger}
}

// Snapshot returns the last result; it never waits on ntpd.
func (p *Poller) Snapshot() Snapshot {
	p.mu.RLock()
	defer p.mu.RUnlock()
	return p.snap
}

// Run polls until ctx is done.
func (p *Poller) Run(ctx context.Context) error {
	defer p.client.Close()
	t := time.NewTicker(p.cfg.PollInterval)
	defer t.Stop()
	for {
		p.Poll(ctx)
		select {
		case <-ctx.Done():
			return nil
		case <-t.C:
		}
	}
}

// Poll reads ntpd once and publishes the result; a change between up and
// down is logged once.
func (p *Poller) Poll(ctx context.Context) {
	start := time.Now()
	d, err := p.client.Poll(ctx)
	end := time.Now()
	p.mu.Lock()
	s := p.snap
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
	case err == nil && !wasUp:
		p.logger.Info("ntpd answers again", "address", p.cfg.Address)
	}
}
