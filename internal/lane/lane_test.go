package lane_test

import (
	"context"
	"sync"
	"testing"
	"time"

	"github.com/clockwatch/clockwatch/internal/lane"
)

// spin keeps the CPU busy for d.
func spin(d time.Duration) {
	for start := time.Now(); time.Since(start) < d; {
	}
}

// However hard its users push, the lane's turns take at most its share of
// the wall clock (plus one burst), one turn at a time.
func TestShareAndOneTurnAtATime(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		share float64
		turn  time.Duration
	}{
		{0.5, time.Millisecond},
		{0.25, 2 * time.Millisecond},
		{1, time.Millisecond},
	} {
		l := lane.New(2, tc.share, 2*time.Millisecond)
		var mu sync.Mutex
		var busy, forgiven time.Duration
		inTurn := 0
		overlap := false
		began := time.Now()
		ctx, cancel := context.WithTimeout(context.Background(), 300*time.Millisecond)
		var wg sync.WaitGroup
		for w := range 4 {
			wg.Go(func() {
				for ctx.Err() == nil {
					l.Do(ctx, lane.Class(w%2), func() {
						mu.Lock()
						inTurn++
						overlap = overlap || inTurn > 1
						mu.Unlock()
						start := time.Now()
						spin(tc.turn)
						took := time.Since(start)
						mu.Lock()
						inTurn--
						busy += took
						if rest := time.Duration(float64(took) * (1/tc.share - 1)); rest > lane.MaxRest {
							// Descheduled mid-turn on a loaded machine:
							// the lane forgives the rest past MaxRest.
							forgiven += rest - lane.MaxRest
						}
						mu.Unlock()
					})
				}
			})
		}
		wg.Wait()
		cancel()
		wall := time.Since(began)
		if overlap {
			t.Errorf("share %g: two turns at once", tc.share)
		}
		// Upper bound only: a loaded machine makes turns rarer, never
		// more frequent.
		if limit := time.Duration(tc.share*float64(wall+forgiven)) + 2*time.Millisecond + tc.turn; busy > limit {
			t.Errorf("share %g: turns took %s of %s, want at most %s", tc.share, busy, wall, limit)
		}
		t.Logf("share %g, turns of %s: %s of %s (%.2f)", tc.share, tc.turn, busy, wall, float64(busy)/float64(wall))
	}
}

// The classes are served in turn: a class with one waiter behind a class
// with many waits for at most one of the other class's turns.
func TestClassesTakeTurns(t *testing.T) {
	t.Parallel()
	l := lane.New(2, 1, 0)
	held, err := l.Acquire(context.Background(), 0)
	if err != nil {
		t.Fatal(err)
	}
	order := make(chan int, 11)
	var wg sync.WaitGroup
	queue := func(c lane.Class, id int) {
		wg.Go(func() { l.Do(context.Background(), c, func() { order <- id }) })
	}
	for i := range 10 {
		queue(0, i)
		for l.Waiting() < i+1 {
			time.Sleep(time.Millisecond)
		}
	}
	queue(1, 100)
	for l.Waiting() < 11 {
		time.Sleep(time.Millisecond)
	}
	held.Done()
	wg.Wait()
	close(order)
	var got []int
	for id := range order {
		got = append(got, id)
	}
	last := -1
	for i, id := range got {
		switch {
		case id == 100 && i > 1:
			t.Errorf("the other class's only waiter had turn %d of %v, want one of the first two", i, got)
		case id != 100 && id < last:
			t.Errorf("one class's waiters out of the order they came: %v", got)
		case id != 100:
			last = id
		}
	}
}

// A long turn (a bcrypt check) owes a rest of at most MaxRest.
func TestLongTurnRestsAtMostMaxRest(t *testing.T) {
	t.Parallel()
	l := lane.New(1, 0.5, 0)
	l.Do(context.Background(), 0, func() { time.Sleep(100 * time.Millisecond) })
	began := time.Now()
	l.Do(context.Background(), 0, func() {})
	if waited := time.Since(began); waited > lane.MaxRest+50*time.Millisecond {
		t.Errorf("the turn after a 100 ms one waited %s, want about %s (MaxRest)", waited, lane.MaxRest)
	} else if waited < lane.MaxRest/2 {
		t.Errorf("the turn after a 100 ms one waited %s: no rest", waited)
	}
}

// A waiter that gives up leaves the lane usable, and a zero Turn's Done does
// nothing.
func TestGivingUp(t *testing.T) {
	t.Parallel()
	l := lane.New(1, 1, 0)
	held, err := l.Acquire(context.Background(), 0)
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Millisecond)
	defer cancel()
	if _, err := l.Acquire(ctx, 0); err == nil {
		t.Fatal("Acquire while the lane is held returned no error when its context ended")
	}
	lane.Turn{}.Done()
	held.Done()
	done := make(chan struct{})
	go func() { l.Do(context.Background(), 0, func() {}); close(done) }()
	select {
	case <-done:
	case <-time.After(5 * time.Second):
		t.Fatal("the lane stayed taken after a waiter gave up")
	}
	if n := l.Waiting(); n != 0 {
		t.Errorf("%d waiting, want 0", n)
	}
}
