package pulse

import (
	"context"
	"fmt"
	"slices"
	"sync"
	"time"
)

// Pulse calls functions every period, those of one period together, from
// the goroutine that runs it. Register with Every before Run. The functions
// must be quick and must not block (a slow one delays the others): what
// they start that may wait belongs in a goroutine of its own.
type Pulse struct {
	mu      sync.Mutex
	running bool
	periods []time.Duration
	fns     map[time.Duration][]func()
}

// New returns a pulse with nothing to do.
func New() *Pulse { return &Pulse{fns: map[time.Duration][]func(){}} }

// Every makes Run call f every period. It panics when Run has started or
// the period is not positive: both are mistakes of the wiring.
func (p *Pulse) Every(period time.Duration, f func()) {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.running {
		panic("pulse: Every after Run")
	}
	if period <= 0 {
		panic(fmt.Sprintf("pulse: non-positive period %s", period))
	}
	if _, ok := p.fns[period]; !ok {
		p.periods = append(p.periods, period)
	}
	p.fns[period] = append(p.fns[period], f)
}

// Run calls the functions until ctx is done: one time.Ticker per distinct
// period (one for the defaults, where everything runs every second). It
// returns nil.
func (p *Pulse) Run(ctx context.Context) error {
	p.mu.Lock()
	p.running = true
	periods := slices.Clone(p.periods)
	p.mu.Unlock()
	if len(periods) == 0 {
		<-ctx.Done()
		return nil
	}
	tickers := make([]*time.Ticker, len(periods))
	for i, d := range periods {
		tickers[i] = time.NewTicker(d)
		defer tickers[i].Stop()
	}
	if len(periods) == 1 {
		// The common case without reflection: one period.
		fns := p.fns[periods[0]]
		for {
			select {
			case <-ctx.Done():
				return nil
			case <-tickers[0].C:
				for _, f := range fns {
					f()
				}
			}
		}
	}
	// Several periods (a non-default configuration): a goroutine per
	// period keeps the code simple; the process then wakes per period.
	var wg sync.WaitGroup
	for i, d := range periods {
		fns := p.fns[d]
		t := tickers[i]
		wg.Go(func() {
			for {
				select {
				case <-ctx.Done():
					return
				case <-t.C:
					for _, f := range fns {
						f()
					}
				}
			}
		})
	}
	wg.Wait()
	return nil
}
