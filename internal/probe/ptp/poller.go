package ptp

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"time"

	"github.com/clockwatch/clockwatch/internal/loop"
	"github.com/clockwatch/clockwatch/internal/timesource"
	"github.com/facebook/time/ptp/protocol"
)

// Snapshot is the poller's last result. It is a value; its slices are never
// modified after it is published.
type Snapshot struct {
	// Address is the socket polled.
	Address string
	// Found is true once ptp4l has answered in this process, or when its
	// address is pinned: a ptp4l that "auto" never found is absent and
	// raises nothing.
	Found bool
	// Data is the last successful reading; HaveData reports whether there
	// was one.
	Data     Data
	HaveData bool
	// Tally counts the polls of ptp4l (not the looks for a socket that is
	// not there); its LastSuccess is when Data was read, its Err (Found
	// false) may say that "auto" looked and found no socket.
	loop.Tally
	// State is the clock's port state (Data.State) at the last success,
	// and StateSince when it became that: the stepdown trigger "port not
	// SLAVE or MASTER for longer than a grace" reads both.
	State      protocol.PortState
	StateSince time.Time
	// Grandmaster is the last grandmaster other than this clock that it
	// followed; empty before the first. GrandmasterChanges counts changes
	// from one such grandmaster to another (A, lost, B counts one; A, lost,
	// A none: the port state says the clock was lost), GrandmasterChangedAt
	// is the last change and PreviousGrandmaster the identity before it.
	// The stepdown trigger "grandmaster changed" reads these.
	Grandmaster          string
	GrandmasterChanges   uint64
	GrandmasterChangedAt time.Time
	PreviousGrandmaster  string
}

// State is the port state that describes the clock: a boundary clock with
// a SLAVE and a MASTER port is a slave. The order of preference is SLAVE,
// UNCALIBRATED, MASTER (GRAND_MASTER), PASSIVE, PRE_MASTER, LISTENING, then
// anything else (FAULTY, DISABLED, INITIALIZING); 0 without ports.
func (d Data) State() protocol.PortState {
	rank := func(s protocol.PortState) int {
		switch s {
		case protocol.PortStateSlave:
			return 7
		case protocol.PortStateUncalibrated:
			return 6
		case protocol.PortStateMaster, protocol.PortStateGrandMaster:
			return 5
		case protocol.PortStatePassive:
			return 4
		case protocol.PortStatePreMaster:
			return 3
		case protocol.PortStateListening:
			return 2
		}
		return 1
	}
	var best protocol.PortState
	for _, p := range d.Ports {
		if best == 0 || rank(p.State) > rank(best) {
			best = p.State
		}
	}
	return best
}

// Poller reads ptp4l on its own interval and keeps the last result. It is
// a task: Run it under the daemon's errgroup.
type Poller struct {
	cfg    Config
	client *Client
	logger *slog.Logger
	stat   func(string) (os.FileInfo, error)
	snap   loop.Latest[Snapshot]
}

// NewPoller returns a poller for the configured ptp4l.
func NewPoller(cfg Config, logger *slog.Logger) *Poller {
	if logger == nil {
		logger = slog.New(slog.DiscardHandler)
	}
	path := cfg.SocketPath()
	p := &Poller{cfg: cfg, logger: logger, stat: os.Stat,
		client: NewClient(path, cfg.Domain, cfg.ReplySocketDir, cfg.Timeout)}
	p.snap.Update(func(s *Snapshot) { s.Address, s.Found = path, cfg.expected() })
	return p
}

// Snapshot returns the last result; it never waits on ptp4l.
func (p *Poller) Snapshot() Snapshot { return p.snap.Load() }

// Run polls until ctx is done, then closes the connection.
func (p *Poller) Run(ctx context.Context) error {
	defer p.client.Close()
	loop.Next(ctx, func(ctx context.Context) time.Duration {
		p.Poll(ctx)
		return p.nextPoll()
	})
	return nil
}

// nextPoll is the wait before the next poll: longer while "auto" has not
// found ptp4l (a stat every second was most of what an idle clockwatch
// spent on PTP).
func (p *Poller) nextPoll() time.Duration {
	return loop.Wait(p.cfg.expected() || p.Snapshot().Found, p.cfg.PollInterval)
}

// Poll reads ptp4l once and publishes the result. With "auto" and no socket
// at the default path it does nothing until ptp4l has been found once;
// after that, a vanished socket is ptp4l lost, reported down.
func (p *Poller) Poll(ctx context.Context) {
	if !p.cfg.expected() && !p.Snapshot().Found {
		if _, err := p.stat(p.client.path); errors.Is(err, os.ErrNotExist) {
			// Absent: not a poll, no metrics. The error makes the reading
			// "looked, not there" rather than "not looked yet", which a
			// policy waiting for every source's first poll must tell apart.
			p.snap.Update(func(s *Snapshot) { s.Err = timesource.Absent(fmt.Errorf("ptp4l is absent: %w", err)) })
			return
		}
	}
	// The whole poll (one request per data set and port) ends within one
	// poll interval, whatever each request's timeout allows.
	d, start, end, err := loop.Timed(ctx, p.cfg.PollInterval, time.Now, p.client.Poll)
	var wasUp bool
	s := p.snap.Update(func(snap *Snapshot) {
		wasUp = snap.Count(start, end, err)
		if err == nil {
			p.observe(snap, d, end)
		}
	})
	switch {
	case err != nil && wasUp:
		p.logger.Error("cannot read ptp4l", "err", err)
	case err == nil && (!wasUp || s.Polls == 1):
		p.logger.Info("ptp4l answers", "address", s.Address, "state", s.State.String(), "grandmaster", d.GrandmasterIdentity)
	}
}

// observe folds a successful reading into s: the state and grandmaster
// change times.
func (p *Poller) observe(s *Snapshot, d Data, at time.Time) {
	if st := d.State(); !s.HaveData || st != s.State {
		if s.HaveData {
			p.logger.Info("ptp4l port state changed", "from", s.State.String(), "to", st.String())
		}
		s.State, s.StateSince = st, at
	}
	if gm := d.GrandmasterIdentity; gm != "" && !d.Grandmaster() {
		if s.Grandmaster != "" && gm != s.Grandmaster {
			p.logger.Warn("PTP grandmaster changed", "from", s.Grandmaster, "to", gm)
			s.GrandmasterChanges++
			s.GrandmasterChangedAt = at
			s.PreviousGrandmaster = s.Grandmaster
		}
		s.Grandmaster = gm
	}
	s.Found, s.Data, s.HaveData, s.LastSuccess = true, d, true, at
}
