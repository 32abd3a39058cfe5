package peers

import (
	"net/netip"
	"time"
)

// limiter is a token bucket per source address: burst requests at once,
// then rate a second. Its table is bounded: when full, the sources whose
// bucket has refilled (idle ones) make room; a new source finds none only
// while max sources are all busy, and is then refused, which under a flood
// of many sources is what a limit is for.
type limiter struct {
	rate, burst float64
	max         int
	m           map[netip.Addr]*bucket
}

type bucket struct {
	tokens float64
	last   time.Duration
}

func newLimiter(rate float64, burst, max int) *limiter {
	return &limiter{rate: rate, burst: float64(burst), max: max, m: map[netip.Addr]*bucket{}}
}

// allow takes a token of a's bucket at mono (a monotonic time); false when
// there is none.
func (l *limiter) allow(a netip.Addr, mono time.Duration) bool {
	b, ok := l.m[a]
	if !ok {
		if len(l.m) >= l.max && !l.evict(mono) {
			return false
		}
		b = &bucket{tokens: l.burst, last: mono}
		l.m[a] = b
	}
	b.tokens = min(l.burst, b.tokens+(mono-b.last).Seconds()*l.rate)
	b.last = mono
	if b.tokens < 1 {
		return false
	}
	b.tokens--
	return true
}

// evict drops the sources whose bucket is full again by mono; it reports
// whether it made room.
func (l *limiter) evict(mono time.Duration) bool {
	n := len(l.m)
	for a, b := range l.m {
		if b.tokens+(mono-b.last).Seconds()*l.rate >= l.burst {
			delete(l.m, a)
		}
	}
	return len(l.m) < n
}
