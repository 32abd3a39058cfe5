//go:build linux

package segment

import (
	"context"
	"fmt"
	"log/slog"
	"sync"
	"time"

	"github.com/clockwatch/clockwatch/internal/announce"
	"github.com/clockwatch/clockwatch/internal/clockbound"
	"github.com/clockwatch/clockwatch/internal/policy"
	"github.com/clockwatch/clockwatch/internal/pulse"
	"github.com/clockwatch/clockwatch/internal/timesource"
)

// changeTolerance and coarseTick say how far the bound judged now may be
// from the one a reader computes from the last write (its bound grown by
// the maximum drift since its as_of) without a write: 1 µs for the rounding
// on both sides, plus the drift over a tick of CLOCK_MONOTONIC_COARSE, which
// as_of is read from (up to 10 ms behind the monotonic clock the growth is
// judged by: 150 ns at 15 ppm). A source's new figures move the bound by far
// more.
const (
	changeTolerance = time.Microsecond
	coarseTick      = 10 * time.Millisecond
)

// eventBuffer is how many announcements may wait for the publisher. It
// reads the announced state (its subscription's Latest) at every write, so
// a dropped announcement only delays a write, it never makes the segment
// disagree with the socket.
const eventBuffer = 16

// Options are the publisher's inputs besides its configuration.
type Options struct {
	// Readings returns the latest reading of every time source; only the
	// authoritative ones bound the clock.
	Readings func() []timesource.Reading
	// Announcer is the daemon's announcer, whose transport the segment
	// is (NewPublisher subscribes); nil without one (the status then
	// follows the readings alone).
	Announcer announce.Subscribable
	// Clock reads as_of; nil is SysClock.
	Clock clockbound.Clock
	// Now is the time the readings' LastSuccess is measured against; nil
	// is time.Now (the monotonic reading does the measuring).
	Now func() time.Time
	// Logger receives status changes; nil discards them.
	Logger *slog.Logger
	// Pulse, when set, times the rewrites on the daemon's shared ticks
	// (the caller runs it); nil: Run runs a pulse of its own.
	Pulse *pulse.Pulse
}

// Publisher keeps the segment up to date. It is a task: Run it.
type Publisher struct {
	cfg  clockbound.Config
	seg  *clockbound.Segment
	opts Options
	log  *slog.Logger
	met  *metrics
	// sub is the subscription to the announcer (nil without one): each
	// announcement wakes Run to write, and every write reads its Latest.
	sub *announce.Subscription

	mu   sync.Mutex
	last Written
	// writeMu makes Write the segment's only writer at a time (the pulse
	// and Run's events both write): a second writer tears the seqlock.
	writeMu sync.Mutex

	// live is set while Run serves: the pulse writes only then, never to
	// a segment not yet written by Run or already closed.
	liveMu   sync.Mutex
	live     bool
	ownPulse *pulse.Pulse
	// failed carries a periodic write's error to Run.
	failed chan error
}

// Written is the publisher's last write, for metrics and tests.
type Written struct {
	Verdict
	Record clockbound.Record
	// At is when it was written (wall clock); zero before the first.
	At time.Time
	// Writes counts writes since the start; Recreated the segments written
	// anew because the file changed under the mapping.
	Writes, Recreated uint64
}

// NewPublisher returns a publisher writing to seg (which it closes when Run
// returns, with its subscription to the announcer).
func NewPublisher(cfg clockbound.Config, seg *clockbound.Segment, opts Options) *Publisher {
	if opts.Readings == nil {
		opts.Readings = func() []timesource.Reading { return nil }
	}
	if opts.Clock == nil {
		opts.Clock = clockbound.SysClock{}
	}
	if opts.Now == nil {
		opts.Now = time.Now
	}
	if opts.Logger == nil {
		opts.Logger = slog.New(slog.DiscardHandler)
	}
	p := &Publisher{cfg: cfg, seg: seg, opts: opts, log: opts.Logger.With("component", "clockbound"), failed: make(chan error, 1)}
	p.met = newMetrics(p)
	if opts.Announcer != nil {
		p.sub = opts.Announcer.Subscribe("clockbound", announce.Buffered(eventBuffer))
	}
	if opts.Pulse == nil {
		p.ownPulse = pulse.New()
		opts.Pulse = p.ownPulse
	}
	opts.Pulse.Every(cfg.Interval, p.tick)
	return p
}

// Nudge looks at the figures now: the daemon's feed calls it after each
// feed of the sources' readings, when they may have changed, so that new
// figures reach the segment at once and nothing needs to look every second.
// It writes only when a reader of the last write would read something else
// than the figures say, or the last write is Config.Interval old.
func (p *Publisher) Nudge() { p.look(0) }

// tick is the pulse's, every Config.Interval: the last write would be older
// than that at the next tick, so it writes (ClockBound's readers take a
// segment older than 5 s for free running), unless the last write is less
// than sameWakeup old (the feed's Nudge on the same wake-up of the pulse):
// the segment is then at most Config.Interval + sameWakeup old at the next
// tick, still within the 5 s.
func (p *Publisher) tick() { p.look(p.cfg.Interval - min(sameWakeup, p.cfg.Interval/8)) }

// sameWakeup is how recent a write counts for the pulse's tick, at most an
// eighth of Config.Interval.
const sameWakeup = 500 * time.Millisecond

// look writes the segment when a reader of the last write would now read
// something else than the figures say (another status or marker, a bound
// that is not the last one grown by the drift), or when the last write
// would be Config.Interval old within ahead.
func (p *Publisher) look(ahead time.Duration) {
	p.liveMu.Lock()
	defer p.liveMu.Unlock()
	if !p.live {
		return
	}
	if err := p.write(true, ahead); err != nil {
		p.live = false
		p.failed <- err // the first error only: live is off now
	}
}

// Last returns the last write.
func (p *Publisher) Last() Written {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.last
}

// Run writes the segment at once, then when its figures change (looked at
// when Nudge says they may have), every interval, and at every stepdown
// event, until ctx is done. It fails only when the clock cannot be read.
func (p *Publisher) Run(ctx context.Context) error {
	defer p.seg.Close()
	if p.sub != nil {
		defer p.sub.Close()
	}
	defer func() {
		p.liveMu.Lock()
		p.live = false
		p.liveMu.Unlock()
	}()
	var events <-chan announce.Announcement
	if p.sub != nil {
		events = p.sub.C()
	}
	if err := p.Write(); err != nil {
		return err
	}
	p.log.Info("clockbound segment written", "path", p.seg.Path(), "status", p.Last().Status, "why", p.Last().Why,
		"max_drift_ppb", p.cfg.MaxDriftPPB)
	p.liveMu.Lock()
	p.live = true
	p.liveMu.Unlock()
	if p.ownPulse != nil {
		pctx, stop := context.WithCancel(ctx)
		done := make(chan struct{})
		go func() { p.ownPulse.Run(pctx); close(done) }()
		defer func() { stop(); <-done }()
	}
	for {
		select {
		case <-ctx.Done():
			return nil
		case err := <-p.failed:
			return err
		case _, ok := <-events:
			if !ok {
				events = nil
				continue
			}
		}
		if err := p.Write(); err != nil {
			return err
		}
	}
}

// Write judges the clock now and writes the segment once.
func (p *Publisher) Write() error { return p.write(false, 0) }

// write is Write; periodic (a look) writes only when the figures changed
// or the last write is old within ahead (changed), and then also checks that the segment's path still names the
// mapped file (a path lookup, kept off the event path).
func (p *Publisher) write(periodic bool, ahead time.Duration) error {
	p.writeMu.Lock()
	defer p.writeMu.Unlock()
	// as_of first, the bound after: the bound is then computed for an
	// instant at or after as_of, never smaller than the bound at as_of.
	asOf, err := p.opts.Clock.MonotonicCoarse()
	if err != nil {
		return fmt.Errorf("clockbound segment: %w", err)
	}
	var ann *policy.Status
	if p.sub != nil {
		st := p.sub.Latest().Status
		ann = &st
	}
	now := p.opts.Now()
	v := Judge(ann, p.opts.Readings(), now, p.cfg.MaxDriftPPB)
	rec := clockbound.Record{AsOf: asOf, VoidAfter: asOf + clockbound.VoidAfter, Bound: v.Bound, MaxDriftPPB: p.cfg.MaxDriftPPB, Status: v.Status}
	if ann != nil && ann.HasDisruptionMarker {
		// The marker the announced state speaks for, never the device's
		// latest: taken with the state under one lock, so that a new
		// marker is written with the stepdown it caused and a reader who
		// sees a newer one on the device knows the segment lags.
		rec.DisruptionMarker, rec.DisruptionSupport = ann.DisruptionMarker, true
	}
	if periodic && !p.changed(rec, ahead) {
		return nil
	}
	recreated := uint64(0)
	if periodic {
		err = p.seg.Check()
	}
	if err == nil {
		err = p.seg.Write(rec)
	}
	if err != nil {
		// Truncated, removed or replaced by someone else: readers see a
		// new segment from now on (those mapping the old file age it
		// into free running, then unknown, as when clockwatch stops).
		p.log.Warn("the clockbound segment changed under clockwatch: writing a new one", "path", p.seg.Path(), "err", err)
		if rerr := p.seg.Recreate(); rerr != nil {
			return fmt.Errorf("clockbound segment: %w; writing a new one: %w", err, rerr)
		}
		if err := p.seg.Write(rec); err != nil {
			return fmt.Errorf("clockbound segment: %w", err)
		}
		recreated = 1
	}
	p.mu.Lock()
	prev := p.last
	p.last = Written{Verdict: v, Record: rec, At: now, Writes: prev.Writes + 1, Recreated: prev.Recreated + recreated}
	p.mu.Unlock()
	if prev.Writes > 0 && (prev.Status != v.Status || prev.Why != v.Why) {
		p.log.Info("clockbound status", "status", v.Status, "was", prev.Status, "why", v.Why, "was_why", prev.Why,
			"bound", v.Bound, "from", v.Source)
	}
	return nil
}

// changed reports whether rec says something else than the last write
// does to a reader at rec's as_of, or the last write is due again: a reader
// grows the last bound by the maximum drift since its as_of (ClockBound's
// compute_bound_at), which is what Judge does between a source's updates,
// so that while the figures stay the segment need not be written.
// ClockBound's readers take a synchronized or free running status older
// than 5 s (boundedtime.RestartGrace) for free running: Config.Interval
// (4 s at most) rewrites it before then.
func (p *Publisher) changed(rec clockbound.Record, ahead time.Duration) bool {
	p.mu.Lock()
	last, writes := p.last.Record, p.last.Writes
	p.mu.Unlock()
	if writes == 0 || rec.Status != last.Status || rec.MaxDriftPPB != last.MaxDriftPPB ||
		rec.DisruptionMarker != last.DisruptionMarker || rec.DisruptionSupport != last.DisruptionSupport {
		return true
	}
	age := rec.AsOf - last.AsOf
	if age+ahead >= p.cfg.Interval || age < 0 {
		return true
	}
	// The reader's arithmetic (boundedtime.Snapshot.At, ClockBound's).
	read := last.Bound + time.Duration(float64(age)/1e9*float64(last.MaxDriftPPB))
	tolerance := changeTolerance + time.Duration(float64(coarseTick)/1e9*float64(rec.MaxDriftPPB))
	return (rec.Bound - read).Abs() > tolerance
}

// Close gives the segment back (unmaps it, releases its lock) and ends the
// subscription when Run will not run: a start that fails after the segment
// was created.
func (p *Publisher) Close() error {
	if p.sub != nil {
		p.sub.Close()
	}
	return p.seg.Close()
}
