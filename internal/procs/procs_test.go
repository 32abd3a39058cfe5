package procs

import (
	"runtime"
	"slices"
	"sync"
	"testing"
	"time"
)

// fake records each GOMAXPROCS set and gives the test the clock.
type fake struct {
	mu   sync.Mutex
	sets []int
	t    time.Time
}

func (f *fake) set(n int) int {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.sets = append(f.sets, n)
	return 0
}

func (f *fake) now() time.Time {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.t
}

func (f *fake) advance(d time.Duration) {
	f.mu.Lock()
	f.t = f.t.Add(d)
	f.mu.Unlock()
}

func (f *fake) got() []int {
	f.mu.Lock()
	defer f.mu.Unlock()
	return slices.Clone(f.sets)
}

func TestNothingToRaise(t *testing.T) {
	for _, c := range []struct{ idle, busy int }{{1, 1}, {2, 1}, {0, 2}} {
		f := &fake{}
		p := newProcs(f.set, c.idle, c.busy, nil, f.now)
		if p != nil {
			t.Errorf("idle %d, busy %d: got a Procs, want nil", c.idle, c.busy)
		}
		p.Busy("test")
		p.Settle()
		if p.Raised() || len(f.got()) != 0 {
			t.Errorf("idle %d, busy %d: a nil Procs did something: raised %v, sets %v", c.idle, c.busy, p.Raised(), f.got())
		}
	}
}

func TestRaiseHoldLower(t *testing.T) {
	f := &fake{t: time.Unix(1e9, 0)}
	p := newProcs(f.set, 1, 2, nil, f.now)
	p.Settle()
	if len(f.got()) != 0 {
		t.Fatalf("a Settle before any Busy set %v", f.got())
	}
	for range 1000 {
		p.Busy("a flood")
	}
	if want := []int{2}; !slices.Equal(f.got(), want) || !p.Raised() {
		t.Fatalf("after 1,000 Busy: sets %v raised %v, want %v true", f.got(), p.Raised(), want)
	}
	// Busy keeps it raised: each one restarts the hold.
	for range 3 {
		f.advance(Hold / 2)
		p.Busy("the flood goes on")
		p.Settle()
	}
	f.advance(Hold - time.Nanosecond)
	p.Settle()
	if want := []int{2}; !slices.Equal(f.got(), want) {
		t.Fatalf("lowered before the hold: sets %v", f.got())
	}
	f.advance(time.Nanosecond)
	p.Settle()
	if want := []int{2, 1}; !slices.Equal(f.got(), want) || p.Raised() {
		t.Fatalf("after the hold: sets %v raised %v, want %v false", f.got(), p.Raised(), want)
	}
	p.Settle()
	p.Busy("again")
	if want := []int{2, 1, 2}; !slices.Equal(f.got(), want) || !p.Raised() {
		t.Fatalf("a Busy after the lowering: sets %v raised %v, want %v true", f.got(), p.Raised(), want)
	}
}

// TestBusyDuringSettle: however Busy and Settle interleave, work that said
// Busy after the hold ran out finds the processors raised once both return.
func TestBusyDuringSettle(t *testing.T) {
	for range 200 {
		f := &fake{t: time.Unix(1e9, 0)}
		p := newProcs(f.set, 1, 2, nil, f.now)
		p.Busy("first")
		f.advance(Hold)
		var wg sync.WaitGroup
		wg.Go(p.Settle)
		wg.Go(func() { p.Busy("during the settle") })
		wg.Wait()
		sets := f.got()
		if !p.Raised() || sets[len(sets)-1] != 2 {
			t.Fatalf("a Busy during the Settle: raised %v, sets %v: want raised, the last set 2", p.Raised(), sets)
		}
	}
}

// TestSetsTheRuntime: with runtime.GOMAXPROCS, the runtime's value follows.
func TestSetsTheRuntime(t *testing.T) {
	before := runtime.GOMAXPROCS(1)
	t.Cleanup(func() { runtime.GOMAXPROCS(before) })
	f := &fake{t: time.Unix(1e9, 0)}
	p := newProcs(runtime.GOMAXPROCS, 1, 2, nil, f.now)
	p.Busy("test")
	if got := runtime.GOMAXPROCS(0); got != 2 {
		t.Fatalf("GOMAXPROCS %d while busy, want 2", got)
	}
	f.advance(Hold)
	p.Settle()
	if got := runtime.GOMAXPROCS(0); got != 1 {
		t.Fatalf("GOMAXPROCS %d after the hold, want 1", got)
	}
}
