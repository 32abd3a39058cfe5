// Package ordering holds orderings and rebases of readings: a step moves
// every reading alike, so none of them is a deadline. Two stored readings
// compared outside a sort, a heap, a min or a max are the lower-severity
// category.
package ordering

import (
	"slices"
	"sort"
	"time"
)

type item struct {
	at   int64
	name string
}

// A heap of items ordered by time.
type queue []item

func (q queue) Len() int           { return len(q) }
func (q queue) Less(i, j int) bool { return q[i].at < q[j].at }
func (q queue) Swap(i, j int)      { q[i], q[j] = q[j], q[i] }

func (q *queue) push(name string) { *q = append(*q, item{at: time.Now().UnixNano(), name: name}) }

func sorted(q queue) {
	sort.Slice(q, func(i, j int) bool { return q[i].at < q[j].at })
	slices.SortFunc(q, func(a, b item) int { return int(a.at - b.at) })
}

// Min and max of readings.
func earliest(q queue) int64 {
	first := time.Now().UnixNano()
	for _, it := range q {
		if it.at < first {
			first = it.at
		}
	}
	return first
}

func later(a, b int64) int64 {
	if a > b {
		return a
	}
	return b
}

func callLater(q queue) int64 { return later(q[0].at, time.Now().UnixNano()) }

// A rebase: the offset of now from a stored reading moves it to now.
type track struct {
	base, mark int64
}

func (t *track) rebase() {
	now := time.Now().UnixNano()
	off := now - t.base
	t.base += off
	t.mark = t.mark + (now - t.base)
}

// Two stored readings compared outside a sort: ambiguous.
type lease struct {
	renewedAt, expiresAt int64
}

func (l *lease) renew(ttl int64) {
	l.renewedAt = time.Now().Unix()
	l.expiresAt = l.renewedAt + ttl
}

func (l *lease) stale() bool {
	return l.renewedAt >= l.expiresAt // want `orders two stored wall-clock readings \(wallclock-ambiguous`
}

// Still reported: a renewal check that assigns the deadline anew.
func (l *lease) check(ttl int64) {
	now := time.Now().Unix()
	if now > l.expiresAt { // want `compares wall-clock readings for a deadline`
		l.expiresAt = now + ttl
	}
}

// A deadline an exported method receives from another package (go-redis's
// SetRelaxedTimeoutWithDeadline): a local deadline or an absolute time,
// which the analysis cannot tell. The lower-severity category.
type relaxed struct {
	deadlineNs int64
}

// SetDeadline is called from another package.
func (r *relaxed) SetDeadline(deadline time.Time) { r.deadlineNs = deadline.UnixNano() }

func (r *relaxed) active() bool {
	return time.Now().UnixNano() < r.deadlineNs // want `meets a wall-clock reading with a time.Time a caller in another package passes`
}

// Not a finding: the same parameter kept as a time.Time.
func (r *relaxed) Until(deadline time.Time) time.Duration { return time.Until(deadline) }

// A loop over calendar days between two wall times (gocron's daylight-saving
// handling) measures no interval.
func days(last time.Time) int {
	n := 0
	next := time.Now().In(time.UTC).Add(72 * time.Hour)
	for day := last.AddDate(0, 0, 1); day.Before(next); day = day.AddDate(0, 0, 1) {
		n++
	}
	return n
}

func callDays() int { return days(time.Now()) }
