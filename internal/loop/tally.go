package loop

import (
	"context"
	"sync"
	"time"

	"github.com/clockwatch/clockwatch/internal/timesource"
)

// Tally is what every source poller counts of its polls; its Snapshot
// embeds it.
type Tally struct {
	// Up reports whether the last poll succeeded; Err is why it failed.
	Up  bool
	Err error
	// LastSuccess is when the last successful poll finished (monotonic
	// reading included).
	LastSuccess time.Time
	// PollDuration is how long the last poll took.
	PollDuration time.Duration
	// Polls and Failures count polls since the start.
	Polls, Failures uint64
}

// Count records a poll that ran from start to end and failed with err
// (nil: it succeeded). It reports whether the source was up before it; a
// first poll counts as coming after an up one, so that its failure is news
// to log.
func (t *Tally) Count(start, end time.Time, err error) (wasUp bool) {
	wasUp = t.CountAbsent(start, end, err)
	if err != nil {
		t.Failures++
	}
	return wasUp
}

// CountAbsent is Count for a poll of a source that is not known to be
// there: its failure is no Failure (a node without that time daemon is not
// failing).
func (t *Tally) CountAbsent(start, end time.Time, err error) (wasUp bool) {
	wasUp = t.Up || t.Polls == 0
	t.Polls++
	t.PollDuration = end.Sub(start)
	t.Up, t.Err = err == nil, err
	if err == nil {
		t.LastSuccess = end
	}
	return wasUp
}

// Reading starts the normalised reading of the source a poller tallies:
// its name and role, whether it is found and whether a poll has brought
// data, and the last poll's outcome (Up, Err, LastSuccess). A source that
// has been polled and is down without an error gets silent as its Err (nil
// silent: none). The source fills in its figures.
func (t Tally) Reading(source string, role timesource.Role, found, hasData bool, silent error) timesource.Reading {
	r := timesource.Reading{Source: source, Role: role, Found: found, Up: t.Up, Err: t.Err, HasData: hasData,
		LastSuccess: t.LastSuccess}
	if t.Polls > 0 && !t.Up && r.Err == nil {
		r.Err = silent
	}
	return r
}

// Latest is a poller's last published snapshot: its poll writes it, anyone
// reads it without waiting on the source. The zero Latest holds the zero
// snapshot.
type Latest[T any] struct {
	mu sync.RWMutex
	v  T
}

// Load returns the snapshot.
func (l *Latest[T]) Load() T {
	l.mu.RLock()
	defer l.mu.RUnlock()
	return l.v
}

// Update changes the snapshot in place under the lock, so that readers see
// all of the change or none of it, and returns the snapshot it made.
func (l *Latest[T]) Update(f func(*T)) T {
	l.mu.Lock()
	defer l.mu.Unlock()
	f(&l.v)
	return l.v
}

// Timed runs poll with a deadline timeout from now and says when it started
// and ended on now's clock (time.Now, or a test's).
func Timed[T any](ctx context.Context, timeout time.Duration, now func() time.Time, poll func(context.Context) (T, error)) (v T, start, end time.Time, err error) {
	start = now()
	ctx, cancel := context.WithTimeout(ctx, timeout)
	v, err = poll(ctx)
	cancel()
	return v, start, now(), err
}
