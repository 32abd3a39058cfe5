package pulse

import (
	"context"
	"fmt"
	"slices"
	"sync"
	"time"
)

// Rest is the longest a period rests (EveryWhile): the looks that may find
// new work (a ptp4l that appeared) happen at least that often, and the
// process sleeps in between. Wake ends a rest at once.
const Rest = 8 * time.Second

// Pulse calls functions every period, those of one period together, from
// the goroutine that runs it. Register with Every or EveryWhile before Run.
// The functions must be quick and must not block (a slow one delays the
// others): what they start that may wait belongs in a goroutine of its own.
type Pulse struct {
	mu      sync.Mutex
	running bool
	periods []time.Duration
	jobs    map[time.Duration][]job
	// wake has one channel per period, made by Run: Wake sends on each
	// without blocking.
	wake []chan struct{}
}

// job is one registration.
type job struct {
	f func()
	// rest says how long f may wait for its next call; nil: one period.
	rest func() time.Duration
}

// New returns a pulse with nothing to do.
func New() *Pulse { return &Pulse{jobs: map[time.Duration][]job{}} }

// Every makes Run call f every period. It panics when Run has started or
// the period is not positive: both are mistakes of the wiring.
func (p *Pulse) Every(period time.Duration, f func()) { p.EveryWhile(period, f, nil) }

// EveryWhile makes Run call f every period, or less often while rest says
// f may wait longer (asked after each call): when every function of a
// period may wait longer than the period, the period rests for the
// shortest of their waits, at most Rest, until Wake. Whoever makes f's
// wait shorter between calls (a subscriber that connects) calls Wake, so
// that the next call is one period later, not at the rest's end.
func (p *Pulse) EveryWhile(period time.Duration, f func(), rest func() time.Duration) {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.running {
		panic("pulse: Every after Run")
	}
	if period <= 0 {
		panic(fmt.Sprintf("pulse: non-positive period %s", period))
	}
	if _, ok := p.jobs[period]; !ok {
		p.periods = append(p.periods, period)
	}
	p.jobs[period] = append(p.jobs[period], job{f: f, rest: rest})
}

// Wake ends every rest: the periods beat at their own rate again from now.
// It never blocks; before Run it does nothing (Run starts awake).
func (p *Pulse) Wake() {
	p.mu.Lock()
	defer p.mu.Unlock()
	for _, w := range p.wake {
		select {
		case w <- struct{}{}:
		default:
		}
	}
}

// Run calls the functions until ctx is done: one time.Ticker per distinct
// period (one for the defaults, where everything runs every second). It
// returns nil.
func (p *Pulse) Run(ctx context.Context) error {
	p.mu.Lock()
	p.running = true
	periods := slices.Clone(p.periods)
	p.wake = make([]chan struct{}, len(periods))
	for i := range p.wake {
		p.wake[i] = make(chan struct{}, 1)
	}
	wake := p.wake
	p.mu.Unlock()
	if len(periods) == 0 {
		<-ctx.Done()
		return nil
	}
	if len(periods) == 1 {
		// The common case: one period, one goroutine.
		beat(ctx, periods[0], p.jobs[periods[0]], wake[0])
		return nil
	}
	// Several periods (a non-default configuration): a goroutine per
	// period keeps the code simple; the process then wakes per period.
	var wg sync.WaitGroup
	for i, d := range periods {
		jobs := p.jobs[d]
		wg.Go(func() { beat(ctx, d, jobs, wake[i]) })
	}
	wg.Wait()
	return nil
}

// beat calls jobs every period until ctx is done, resting while every job
// may wait longer, and every period again from a wake.
func beat(ctx context.Context, period time.Duration, jobs []job, wake <-chan struct{}) {
	t := time.NewTicker(period)
	defer t.Stop()
	next := period
	for {
		select {
		case <-ctx.Done():
			return
		case <-wake:
			if next != period {
				next = period
				t.Reset(period)
			}
			continue
		case <-t.C:
		}
		wait := Rest
		for _, j := range jobs {
			j.f()
			if j.rest == nil {
				wait = 0
			} else {
				wait = min(wait, j.rest())
			}
		}
		if wait = max(wait, period); wait != next {
			next = wait
			t.Reset(wait)
		}
	}
}
