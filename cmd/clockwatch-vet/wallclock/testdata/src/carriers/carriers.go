// Package carriers carries readings through maps (keys and values, ranged
// over), function values, channels of time.Time, tickers and timers, fields
// that are not data, and bytes.
package carriers

import (
	"encoding/binary"
	"strconv"
	"sync"
	"time"
)

// A rolling window bucketed by time.Now().Unix(): the keys are readings.
type window struct {
	mu      sync.Mutex
	buckets map[int64]int
}

func (w *window) add() {
	w.mu.Lock()
	defer w.mu.Unlock()
	w.buckets[time.Now().Unix()]++
}

func (w *window) count(span int64) int {
	now := time.Now().Unix()
	n := 0
	for ts, c := range w.buckets {
		if now-ts > span { // want `now - ts subtracts two wall-clock readings`
			delete(w.buckets, ts)
			continue
		}
		n += c
	}
	return n
}

// Values ranged over.
type sessions struct {
	seen map[string]int64
}

func (s *sessions) touch(id string) { s.seen[id] = time.Now().UnixMilli() }

func (s *sessions) expire(idle int64) {
	now := time.Now().UnixMilli()
	for id, last := range s.seen {
		if now-last > idle { // want `subtracts two wall-clock readings`
			delete(s.seen, id)
		}
	}
}

// Function values: a package variable, a field, a parameter, a literal.
var nowFunc = time.Now

func since(start int64) int64 {
	return nowFunc().Unix() - start // want `subtracts two wall-clock readings`
}

func callSince() int64 { return since(nowFunc().Unix()) }

type cache struct {
	clock   func() time.Time
	nowNano func() int64
	exp     int64
}

func newCache() *cache {
	return &cache{clock: time.Now, nowNano: func() int64 { return time.Now().UnixNano() }}
}

func (c *cache) put(ttl time.Duration) { c.exp = c.clock().Add(ttl).UnixNano() }

func (c *cache) expired() bool {
	return c.nowNano() > c.exp // want `compares wall-clock readings`
}

func run(now func() time.Time, deadline int64) bool {
	return now().Unix() >= deadline // want `compares wall-clock readings`
}

func callRun() bool { return run(time.Now, time.Now().Add(time.Second).Unix()) }

// Channels of time.Time, ranged over.
func stamps(ch chan time.Time, last int64) int64 {
	ch <- time.Now()
	for t := range ch {
		return t.Unix() - last // want `subtracts two wall-clock readings`
	}
	return 0
}

func callStamps(ch chan time.Time) int64 { return stamps(ch, time.Now().Unix()) }

// Tickers' and timers' readings.
type heartbeat struct {
	last int64
}

func (h *heartbeat) loop(t *time.Ticker, timer *time.Timer) {
	for {
		select {
		case now := <-t.C:
			if now.Unix()-h.last > 10 { // want `subtracts two wall-clock readings`
				return
			}
		case now := <-timer.C:
			h.last = now.Unix()
		case now := <-time.After(time.Second):
			h.last = now.Unix()
		}
	}
}

// A field every encoding skips is not data; an untagged field reached
// through an embedded struct is followed too.
type state struct {
	Meta
	Deadline int64  `json:"-"` // want Deadline:`holds wallint`
	Name     string `json:"name"`
}

// Meta is embedded.
type Meta struct {
	Touched int64 // want Touched:`holds wallint`
}

func (s *state) arm(ttl int64) {
	s.Deadline = time.Now().Unix() + ttl
	s.Touched = time.Now().Unix()
}

func (s *state) due() bool {
	return time.Now().Unix() > s.Deadline // want `compares wall-clock readings`
}

func (s *state) idle() int64 {
	return time.Now().Unix() - s.Touched // want `subtracts two wall-clock readings`
}

// Byte round trips: binary and strconv.
func encode() []byte {
	buf := make([]byte, 16)
	binary.BigEndian.PutUint64(buf[8:], uint64(time.Now().UnixNano()))
	return buf
}

func age(buf []byte) int64 {
	then := int64(binary.BigEndian.Uint64(buf[8:]))
	return time.Now().UnixNano() - then // want `subtracts two wall-clock readings`
}

func callAge() int64 { return age(encode()) }

func text() string { return strconv.FormatInt(time.Now().Unix(), 10) }

func textAge(s string) (int64, error) {
	then, err := strconv.ParseInt(s, 10, 64)
	if err != nil {
		return 0, err
	}
	return time.Now().Unix() - then, nil // want `subtracts two wall-clock readings`
}

func callTextAge() (int64, error) { return textAge(text()) }

// Not reported: a ticker's reading kept as a time.Time, a bucket key used
// only as a label.
func fine(t *time.Ticker, start time.Time) (time.Duration, string) {
	now := <-t.C
	return now.Sub(start), strconv.FormatInt(time.Now().Unix()/60, 10)
}

func callFine(t *time.Ticker) { fine(t, time.Now()) }

// A container of another package (a queue of entries, as bigcache keeps
// them): what goes in through Push comes back through Peek.
type shard struct {
	q queueOf
}

type queueOf interface {
	Push([]byte)
	Peek() ([]byte, error)
}

func (s *shard) set() {
	blob := make([]byte, 8)
	binary.LittleEndian.PutUint64(blob, uint64(time.Now().Unix()))
	s.q.Push(blob)
}

func (s *shard) cleanUp(life uint64) bool {
	oldest, err := s.q.Peek()
	if err != nil {
		return false
	}
	now := uint64(time.Now().Unix())
	return now-binary.LittleEndian.Uint64(oldest) > life // want `subtracts two wall-clock readings`
}

// A scheduler's next run computed from a reading stripped by In (gocron's
// s.now()): for an interval job the wall clock decides the interval, so it
// is reported even where the same code also serves calendar schedules
// (time.Date), which a reviewed directive silences.
func nextRun(last time.Time, every time.Duration, daily bool) time.Time {
	t := last.In(time.UTC)
	if daily {
		return time.Date(t.Year(), t.Month(), t.Day()+1, 3, 0, 0, 0, time.UTC)
	}
	return t.Add(every)
}

func wait(last time.Time) time.Duration {
	next := nextRun(last, time.Minute, false)
	if next.Before(time.Now()) { // want `next has lost its monotonic reading`
		return 0
	}
	return next.Sub(time.Now()) // want `next has lost its monotonic reading`
}

func callWait() time.Duration { return wait(time.Now()) }

// A slice grown with append and ranged over (gocron's nextScheduled).
type runs struct{ scheduled []time.Time }

func (r *runs) add() { r.scheduled = append(r.scheduled, time.Now().Round(0)) }

func (r *runs) prune() {
	now := time.Now()
	for _, t := range r.scheduled {
		if t.After(now) { // want `t has lost its monotonic reading`
			return
		}
	}
}
