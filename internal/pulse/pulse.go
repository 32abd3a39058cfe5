package pulse

import (
	"context"
	"fmt"
	"slices"
	"sync"
	"time"

	"github.com/clockwatch/clockwatch/internal/ktimer"
)

// Rest is the longest a period rests (EveryWhile): the looks that may find
// new work (a ptp4l that appeared) happen at least that often, and the
// process sleeps in between. Wake ends a rest at once.
const Rest = 8 * time.Second

// Pulse calls functions every period, from the one goroutine that runs
// it, with one timer for all: each call is due one period (or its rest)
// after the last, and a function whose call is near when the timer fires
// for another is called then too (Run), so that work of different periods
// shares the process's wake-ups. Register with Every or EveryWhile before
// Run. The functions must be quick and must not block (a slow one delays
// the others): what they start that may wait belongs in a goroutine of its
// own.
type Pulse struct {
	mu      sync.Mutex
	running bool
	jobs    []*job
	// wake is sent on by Wake without blocking; Run receives.
	wake chan struct{}
}

// job is one registration and its schedule (Run's alone).
type job struct {
	period time.Duration
	f      func()
	// rest says how long f may wait for its next call; nil: one period.
	rest func() time.Duration
	// due is when f must be called at the latest; early how much sooner
	// it may be, to share a wake-up.
	due   time.Time
	early time.Duration
}

// New returns a pulse with nothing to do.
func New() *Pulse { return &Pulse{wake: make(chan struct{}, 1)} }

// Every makes Run call f every period, or up to half a period sooner when
// the pulse wakes for other work then. It panics when Run has started or
// the period is not positive: both are mistakes of the wiring.
func (p *Pulse) Every(period time.Duration, f func()) { p.EveryWhile(period, f, nil) }

// EveryWhile makes Run call f every period, or less often while rest says
// f may wait longer (asked after each call, at most Rest): the next call
// is then due that long after, or up to half of it sooner when the pulse
// wakes for other work then. Whoever makes f's wait shorter between calls
// (a subscriber that connects) calls Wake, so that the next call is one
// period later, not at the rest's end.
func (p *Pulse) EveryWhile(period time.Duration, f func(), rest func() time.Duration) {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.running {
		panic("pulse: Every after Run")
	}
	if period <= 0 {
		panic(fmt.Sprintf("pulse: non-positive period %s", period))
	}
	p.jobs = append(p.jobs, &job{period: period, f: f, rest: rest})
}

// Wake ends every rest: each function is called again at most one period
// from now. It never blocks; before Run it does nothing (Run starts awake).
func (p *Pulse) Wake() {
	p.mu.Lock()
	running := p.running
	p.mu.Unlock()
	if !running {
		return
	}
	select {
	case p.wake <- struct{}{}:
	default:
	}
}

// Run calls the functions until ctx is done, on one timer armed for the
// earliest call due. Each time it fires, it calls, in the order they were
// registered, every function whose call is due or within its early margin
// (half the wait it was scheduled for): a 10 s job beside a 4 s one is
// called on the 4 s job's eighth second, so the process wakes for both
// once. It returns nil.
func (p *Pulse) Run(ctx context.Context) error {
	p.mu.Lock()
	p.running = true
	jobs := slices.Clone(p.jobs)
	p.mu.Unlock()
	if len(jobs) == 0 {
		<-ctx.Done()
		return nil
	}
	now := time.Now()
	for _, j := range jobs {
		j.schedule(now, j.period)
	}
	// The kernel's timer, not Go's: Go's wait for a 4 s timer runs late
	// by milliseconds, and the runtime's monitor thread wakes in 20 µs
	// steps meanwhile (internal/ktimer).
	t := ktimer.New()
	defer t.Close()
	t.Reset(until(jobs, now))
	for {
		select {
		case <-ctx.Done():
			return nil
		case <-p.wake:
			now = time.Now()
			for _, j := range jobs {
				if j.due.Sub(now) > j.period {
					j.schedule(now, j.period)
				}
			}
		case <-t.C:
			// A fire that crossed a Reset calls nothing not due.
			now = time.Now()
			for _, j := range jobs {
				if j.due.Sub(now) > j.early {
					continue
				}
				j.f()
				wait := j.period
				if j.rest != nil {
					wait = min(max(j.rest(), j.period), max(Rest, j.period))
				}
				j.schedule(now, wait)
			}
		}
		t.Reset(until(jobs, time.Now()))
	}
}

// schedule makes j's next call due wait after now, or up to half of it
// sooner.
func (j *job) schedule(now time.Time, wait time.Duration) {
	j.due, j.early = now.Add(wait), wait/2
}

// until is the wait from now until the earliest call due.
func until(jobs []*job, now time.Time) time.Duration {
	first := jobs[0].due
	for _, j := range jobs[1:] {
		if j.due.Before(first) {
			first = j.due
		}
	}
	return max(first.Sub(now), 0)
}
