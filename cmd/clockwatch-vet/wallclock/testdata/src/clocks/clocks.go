// Package clocks reads the clock through interfaces: the clock libraries
// (modelled by name), any interface's Now() time.Time, and a project's own
// clock type learned through facts.
package clocks

import (
	"sync/atomic"
	"time"

	bclock "github.com/benbjohnson/clock"
	"github.com/jonboulle/clockwork"
	"k8s.io/utils/clock"

	"myclock"
	"myclockimpl"
)

// A rate limiter in the manner of go.uber.org/ratelimit: the last request's
// time as an int64 in an atomic, from a clock behind an interface. A 10 s
// step back makes Take sleep 10 s.
type limiter struct {
	clock bclock.Clock
	last  atomic.Int64
	per   int64
}

func (l *limiter) take() time.Duration {
	now := l.clock.Now().UnixNano()
	last := l.last.Swap(now)
	if now-last < l.per { // want `now - last subtracts two wall-clock readings`
		return time.Duration(l.per - (now - last)) // want `now - last subtracts`
	}
	return 0
}

// The project's own interface with Now() time.Time.
type Clock interface {
	Now() time.Time
}

type entry struct {
	expires int64
}

func expired(c Clock, e entry) bool {
	return c.Now().Unix() > e.expires // want `compares wall-clock readings`
}

func fill(c Clock, ttl time.Duration) entry {
	return entry{expires: c.Now().Add(ttl).Unix()}
}

// k8s.io/utils/clock: Since of a stripped reading.
func age(c clock.PassiveClock, startedUnix int64) time.Duration {
	started := time.Unix(startedUnix, 0)
	return c.Since(started) // want `c.Since\(started\): started has lost its monotonic reading`
}

func callAge(c clock.PassiveClock) time.Duration { return age(c, c.Now().Unix()) }

// A concrete clock of a modelled package.
func realElapsed(start int64) int64 {
	return clock.RealClock{}.Now().Unix() - start // want `subtracts two wall-clock readings`
}

func callRealElapsed() int64 { return realElapsed(time.Now().Unix()) }

// clockwork's ticker delivers readings.
type watchdog struct{ lastSeen int64 }

func (w *watchdog) ticks(c clockwork.Clock) {
	t := c.NewTicker(time.Second)
	for now := range t.Chan() {
		if now.Unix()-w.lastSeen > 30 { // want `subtracts two wall-clock readings`
			return
		}
	}
}

func (w *watchdog) see() { w.lastSeen = time.Now().Unix() }

// benbjohnson's ticker's C.
func bticks(c bclock.Clock, deadline int64) {
	for now := range c.Ticker(time.Second).C {
		if now.Unix() >= deadline { // want `compares wall-clock readings`
			return
		}
	}
}

func callBticks(c bclock.Clock) { bticks(c, time.Now().Add(time.Minute).Unix()) }

// The project's own clock type, learned from its implementation.
func stale(c myclock.Clock, last int64) bool {
	return c.NowMillis()-last > 5000 // want `subtracts two wall-clock readings`
}

func callStale(c myclock.Clock) bool { return stale(c, c.NowMillis()) }

// Through an interface of one package implemented in another: myclockimpl's
// package fact.
func overdue(t myclock.Ticks, due int64) bool {
	return t.Tick() > due // want `compares wall-clock readings`
}

func callOverdue() bool { return overdue(myclockimpl.Wall{}, time.Now().Unix()+60) }

// Right: the monotonic reading kept through the interface.
func fine(c Clock, l clock.PassiveClock) time.Duration {
	start := c.Now()
	return c.Now().Sub(start) + l.Since(l.Now())
}

// A concrete Now() that is not a clock library's and not a reading: a
// counter of the program's own, nothing to report.
type virtual struct{ t time.Time }

func (v *virtual) Now() time.Time { return v.t }

func virtualElapsed(v *virtual, start int64) int64 { return v.Now().Unix() - start }

// A call through an interface passes its arguments to the implementations:
// gocron's jobSchedule.next(lastRun) with lastRun stripped by In.
type schedule interface {
	next(last time.Time) time.Time
}

type every struct{ d time.Duration }

func (e every) next(last time.Time) time.Time { return last.Add(e.d) }

func arm(s schedule, loc *time.Location) time.Duration {
	next := s.next(time.Now().In(loc))
	return next.Sub(time.Now()) // want `next has lost its monotonic reading`
}
