package procs

import (
	"log/slog"
	"sync"
	"sync/atomic"
	"time"
)

// Hold is how long the processors stay raised after the last Busy: longer
// than a flood's pauses, short enough that the idle daemon soon has one
// again.
const Hold = 30 * time.Second

// Procs raises GOMAXPROCS from idle to busy on Busy and lowers it again on a
// Settle at least Hold after the last Busy. A nil *Procs does nothing.
type Procs struct {
	set        func(int) int // runtime.GOMAXPROCS
	idle, busy int
	log        *slog.Logger
	now        func() time.Time

	raised atomic.Bool
	last   atomic.Int64 // the last Busy, in now's nanoseconds since start
	start  time.Time

	mu sync.Mutex // serializes set
}

// New returns a Procs that sets GOMAXPROCS with set (runtime.GOMAXPROCS) to
// busy while busy and to idle otherwise. It returns nil, which does
// nothing, when busy is not above idle (a machine with one CPU, or
// --runtime.gomaxprocs already there).
func New(set func(int) int, idle, busy int, log *slog.Logger) *Procs {
	return newProcs(set, idle, busy, log, time.Now)
}

func newProcs(set func(int) int, idle, busy int, log *slog.Logger, now func() time.Time) *Procs {
	if busy <= idle || idle < 1 {
		return nil
	}
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	return &Procs{set: set, idle: idle, busy: busy, log: log, now: now, start: now()}
}

// Busy says work that competes with the announcements runs now, and why
// (for the log line of a raise). Cheap when raised already: it is called
// on every refused connection of a flood.
func (p *Procs) Busy(why string) {
	if p == nil {
		return
	}
	p.last.Store(int64(p.now().Sub(p.start)))
	if p.raised.Load() {
		return
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.raised.Load() {
		return
	}
	p.set(p.busy)
	p.raised.Store(true)
	p.log.Info("busy: Go processors raised while it lasts", "gomaxprocs", p.busy, "why", why, "hold", Hold)
}

// Settle lowers the processors to idle when no Busy came for Hold. The
// daemon's pulse calls it every 10 s (an atomic load while not raised).
func (p *Procs) Settle() {
	if p == nil || !p.raised.Load() {
		return
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	last := p.last.Load()
	quiet := p.now().Sub(p.start) - time.Duration(last)
	if !p.raised.Load() || quiet < Hold {
		return
	}
	// A Busy that stored its time before this store sees raised and
	// returns: look at the time again. One after it takes mu and raises.
	p.raised.Store(false)
	if p.last.Load() != last {
		p.raised.Store(true)
		return
	}
	p.set(p.idle)
	p.log.Info("quiet: Go processors lowered", "gomaxprocs", p.idle, "quiet_for", quiet.Round(time.Second))
}

// Raised reports whether the processors are raised now.
func (p *Procs) Raised() bool { return p != nil && p.raised.Load() }
