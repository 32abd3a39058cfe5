package vmclock

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"sync"
	"time"

	"github.com/clockwatch/clockwatch/internal/loop"
	"github.com/clockwatch/clockwatch/internal/timesource"
)

// Device is the VMClock page as the poller reads it: OpenDevice maps the
// real one; tests give a page in memory.
type Device interface {
	// Read returns one consistent read of the page.
	Read() (Page, error)
	Close() error
}

// Opener opens the device at path. An error wrapping os.ErrNotExist means
// there is none (absent, not failed).
type Opener func(path string) (Device, error)

// Snapshot is the poller's last result.
type Snapshot struct {
	// Found is set once the device was read in this process.
	Found bool
	// Tally counts the reads (a device that cannot be opened too, but not
	// one absent under auto): Up, Err, LastSuccess (of Page), Polls and
	// Failures.
	loop.Tally
	// Page is the last good read.
	Page Page
	// Disruptions counts the marker changes this process saw;
	// DisruptionAt is when it saw the last.
	Disruptions  uint64
	DisruptionAt time.Time
}

// Options are the poller's inputs besides its configuration.
type Options struct {
	// Open opens the device; nil is OpenDevice.
	Open Opener
	// Now is the time LastSuccess is stamped with; nil is time.Now.
	Now func() time.Time
	// Changed, when set, is called from the poll with the new reading as
	// soon as the marker or the clock status changed (not at the first
	// read): the stepdown policy gets a migration at once, not at its next
	// feed.
	Changed func(timesource.Reading)
}

// Poller reads the device every poll interval. It is a task: Run it.
type Poller struct {
	cfg  Config
	opts Options
	log  *slog.Logger

	// dev and logged are used by the poll goroutine only. logged is the
	// failure last logged ("" after a success): a failure is logged when
	// it changes, not at every poll (a page never readable in mode on
	// logged an ERROR every 10 ms); the metrics count every one.
	dev    Device
	logged string

	mu   sync.RWMutex
	snap Snapshot
}

// NewPoller returns a poller for cfg, which must be valid and enabled.
func NewPoller(cfg Config, logger *slog.Logger, opts Options) *Poller {
	if opts.Open == nil {
		opts.Open = OpenDevice
	}
	if opts.Now == nil {
		opts.Now = time.Now
	}
	if logger == nil {
		logger = slog.New(slog.DiscardHandler)
	}
	return &Poller{cfg: cfg, opts: opts, log: logger}
}

// Snapshot returns the last result.
func (p *Poller) Snapshot() Snapshot {
	p.mu.RLock()
	defer p.mu.RUnlock()
	return p.snap
}

// Reading is the last result as a normalised reading.
func (p *Poller) Reading() timesource.Reading { return p.Snapshot().Reading() }

var _ timesource.Source = (*Poller)(nil)

// Run polls until ctx is done, then unmaps the page.
func (p *Poller) Run(ctx context.Context) error {
	defer func() {
		if p.dev != nil {
			p.dev.Close()
		}
	}()
	loop.Next(ctx, func(context.Context) time.Duration {
		p.Poll()
		return loop.Wait(p.cfg.Pinned() || p.Snapshot().Found, p.cfg.PollInterval)
	})
	return nil
}

// Poll reads the page once. In mode auto, while the device has never been
// found, a missing device is absence: one line in the log at the first
// look, nothing counted, and a look again every loop.AbsentRecheck.
func (p *Poller) Poll() {
	if p.dev == nil {
		dev, err := p.opts.Open(p.cfg.Path)
		if err != nil {
			p.failOpen(err)
			return
		}
		p.dev = dev
	}
	start := p.opts.Now()
	page, err := p.dev.Read()
	if errors.Is(err, ErrTruncated) {
		// The file shrank under the mapping: map it again at the next
		// poll, which checks its size anew.
		p.dev.Close()
		p.dev = nil
	}
	now := p.opts.Now()
	p.mu.Lock()
	s := p.snap
	wasUp, first := s.Up, !s.Found
	s.Count(start, now, err)
	if err != nil {
		p.snap = s
		p.mu.Unlock()
		p.logFailure("cannot read the VMClock page", err)
		return
	}
	p.logged = ""
	prev := s.Page
	changed := !first && (page.DisruptionMarker != prev.DisruptionMarker || page.ClockStatus != prev.ClockStatus)
	if !first && page.DisruptionMarker != prev.DisruptionMarker {
		s.Disruptions++
		s.DisruptionAt = now
	}
	s.Found, s.Page = true, page
	p.snap = s
	p.mu.Unlock()
	// The stepdown first, the log after: the hook is what lease holders
	// wait for.
	if changed && p.opts.Changed != nil {
		p.opts.Changed(s.Reading())
	}
	switch {
	case first:
		p.log.Info("VMClock device found", "path", p.cfg.Path, "disruption_marker", page.DisruptionMarker,
			"clock_status", page.ClockStatus.String(), "counter_id", page.CounterID, "time", page.HasTime())
	case page.DisruptionMarker != prev.DisruptionMarker:
		p.log.Warn("VMClock disruption: the VM was migrated or restored from a snapshot",
			"disruption_marker", page.DisruptionMarker, "was", prev.DisruptionMarker)
	case !wasUp:
		p.log.Info("VMClock page readable again", "path", p.cfg.Path)
	}
	if page.ClockStatus != prev.ClockStatus && !first {
		p.log.Info("VMClock clock status changed", "status", page.ClockStatus.String(), "was", prev.ClockStatus.String())
	}
}

// failOpen records a device that cannot be opened: absent in mode auto
// until it was found once, a failure otherwise.
func (p *Poller) failOpen(err error) {
	p.mu.Lock()
	s := p.snap
	absent := errors.Is(err, os.ErrNotExist) && !p.cfg.Pinned() && !s.Found
	looked := s.Err != nil
	if absent {
		s.Err = timesource.Absent(fmt.Errorf("no VMClock device at %s (not a VM whose hypervisor offers one, or ptp_vmclock not loaded): %w", p.cfg.Path, err))
		p.snap = s
		p.mu.Unlock()
		if !looked {
			p.log.Info("no VMClock device: the source stays silent", "path", p.cfg.Path)
		}
		return
	}
	now := p.opts.Now()
	s.Count(now, now, fmt.Errorf("opening the VMClock device: %w", err))
	p.snap = s
	p.mu.Unlock()
	p.logFailure("cannot open the VMClock device", err)
}

// logFailure logs a failed poll when it differs from the last one logged:
// once per change, however fast the polls (the failures metric counts them
// all).
func (p *Poller) logFailure(msg string, err error) {
	key := msg + ": " + err.Error()
	if key == p.logged {
		return
	}
	p.logged = key
	p.log.Error(msg, "path", p.cfg.Path, "err", err)
}

// Reading is the snapshot as a normalised reading. VMClock describes the
// hypervisor's clock, not this guest's CLOCK_REALTIME: it is a second
// opinion that bounds nothing (reading the time would take the CPU counter
// it is tied to); what it contributes to the stepdown policy is the
// disruption marker and the clock status "unreliable".
func (s Snapshot) Reading() timesource.Reading {
	r := s.Tally.Reading(SourceName, timesource.SecondOpinion, s.Found, false, nil)
	if !s.Found {
		return r
	}
	pg := s.Page
	r.HasDisruptionMarker, r.DisruptionMarker = true, pg.DisruptionMarker
	r.ClockUnreliable = s.Up && pg.ClockStatus == StatusUnreliable
	r.Synchronized = pg.ClockStatus == StatusSynchronized
	r.Detail = fmt.Sprintf("disruption marker %d, clock %s", pg.DisruptionMarker, pg.ClockStatus)
	switch pg.LeapIndicator {
	case LeapPrePos:
		r.Leap = timesource.LeapInsert
	case LeapPreNeg:
		r.Leap = timesource.LeapDelete
	}
	if pg.Flags&FlagDisruptionImminent != 0 {
		r.Detail += ", disruption imminent (about an hour)"
	} else if pg.Flags&FlagDisruptionSoon != 0 {
		r.Detail += ", disruption soon (about a day)"
	}
	return r
}
