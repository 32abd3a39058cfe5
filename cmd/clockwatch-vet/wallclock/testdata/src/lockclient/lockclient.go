// Package lockclient holds the wall-clock timing the analyzer must find: the
// incident's renewal loop in Go form and its variations.
package lockclient

import (
	"sync"
	"sync/atomic"
	"time"

	"clockutil"
)

// The incident: renewals timed with the wall clock (Java's
// System.currentTimeMillis(), here time.Now().UnixMilli()).
type renewer struct {
	lastRenew      int64
	myLockExpireAt int64
}

func (r *renewer) tick(keepAlive, release func()) {
	now := time.Now().UnixMilli()
	if now-r.lastRenew >= 5_000 { // want `now - r.lastRenew subtracts two wall-clock readings`
		keepAlive()
		r.lastRenew = now
	}
	if now >= r.myLockExpireAt { // want `now >= r.myLockExpireAt compares wall-clock readings for a deadline or an expiry`
		release()
	}
}

func (r *renewer) acquire() {
	r.myLockExpireAt = time.Now().UnixMilli() + 15_000
}

// The Go article's form: Unix() of two readings throws the monotonic clock away.
func elapsedSeconds(start time.Time) int64 {
	return time.Now().Unix() - start.Unix() // want `time.Now\(\).Unix\(\) - start.Unix\(\) subtracts`
}

func callElapsed() int64 { return elapsedSeconds(time.Now()) }

func elapsedNanos() int64 {
	start := time.Now()
	work()
	return time.Now().UnixNano() - start.UnixNano() // want `subtracts two wall-clock readings`
}

func work() {}

// Package variables and unit conversions.
var lastSeen = time.Now().UnixNano() / 1e6

func stale() bool {
	return time.Now().UnixNano()/1e6-lastSeen > 30_000 // want `subtracts two wall-clock readings`
}

// Atomics: the field and the function forms.
type heartbeat struct {
	last atomic.Int64
	prev int64
}

func (h *heartbeat) beat() {
	h.last.Store(time.Now().Unix())
	atomic.StoreInt64(&h.prev, time.Now().Unix())
}

func (h *heartbeat) dead(limit int64) bool {
	if time.Now().Unix()-atomic.LoadInt64(&h.prev) > limit { // want `subtracts two wall-clock readings`
		return true
	}
	return time.Now().Unix()-h.last.Load() > limit // want `subtracts two wall-clock readings`
}

// A cache with a TTL kept in a map, behind a mutex.
type cache struct {
	mu      sync.Mutex
	expires map[string]int64
}

func (c *cache) put(k string, ttl time.Duration) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.expires[k] = time.Now().Add(ttl).Unix()
}

func (c *cache) fresh(k string) bool {
	c.mu.Lock()
	defer c.mu.Unlock()
	exp, ok := c.expires[k]
	return ok && time.Now().Unix() < exp // want `compares wall-clock readings`
}

// Through a helper in another package (facts) and a parameter.
func expired(l clockutil.Lease) bool {
	return clockutil.NowMillis() > l.ExpireAt // want `compares wall-clock readings`
}

func remaining(deadline int64) int64 {
	return deadline - clockutil.NowMillis() // want `subtracts two wall-clock readings`
}

func callRemaining() int64 { return remaining(time.Now().Add(time.Minute).UnixMilli()) }

// Through a channel and a float.
func watch(ch chan int64) float64 {
	ch <- time.Now().UnixMilli()
	t := <-ch
	return float64(time.Now().UnixMilli()-t) / 1000 // want `subtracts two wall-clock readings`
}
