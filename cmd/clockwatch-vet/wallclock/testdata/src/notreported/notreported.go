// Package notreported holds what is right and must not be reported.
package notreported

import (
	"context"
	"encoding/json"
	"fmt"
	"log"
	"math/rand"
	"time"
)

// time.Since on a reading that keeps its monotonic clock.
func elapsed() time.Duration {
	start := time.Now()
	work()
	return time.Since(start)
}

func work() {}

// A deadline kept as a time.Time.
type lease struct {
	deadline time.Time
}

func (l *lease) renew(ttl time.Duration) { l.deadline = time.Now().Add(ttl) }

func (l *lease) expired() bool { return time.Now().After(l.deadline) }

func (l *lease) left() time.Duration { return time.Until(l.deadline) }

// A token's exp comes from elsewhere: comparing with the wall clock is right.
type claims struct {
	Exp int64 `json:"exp"`
}

func valid(token []byte) (bool, error) {
	var c claims
	if err := json.Unmarshal(token, &c); err != nil {
		return false, err
	}
	return time.Now().Unix() < c.Exp, nil
}

// A persisted record: tagged fields are data, even when this package fills them.
type record struct {
	Created int64 `json:"created"`
}

func newRecord() record { return record{Created: time.Now().Unix()} }

func age(r record) int64 { return time.Now().Unix() - r.Created }

// A time parsed from input.
func before(s string) (bool, error) {
	t, err := time.Parse(time.RFC3339, s)
	if err != nil {
		return false, err
	}
	return time.Now().UTC().After(t), nil
}

// Logging, formatting, IDs, seeds.
func logs() string {
	log.Printf("started at %d", time.Now().Unix())
	r := rand.New(rand.NewSource(time.Now().UnixNano()))
	return fmt.Sprintf("job-%d-%d %s", time.Now().UnixNano(), r.Int(), time.Now().UTC().Format(time.RFC3339))
}

// Tickers and contexts.
func loop(ctx context.Context, renew func()) {
	ctx, cancel := context.WithTimeout(ctx, 10*time.Second)
	defer cancel()
	t := time.NewTicker(time.Second)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-t.C:
			renew()
		}
	}
}

// A context's deadline keeps the monotonic reading.
func budget(ctx context.Context) time.Duration {
	if d, ok := ctx.Deadline(); ok {
		return time.Until(d)
	}
	return 0
}

// Two readings that keep their monotonic clock, compared as time.Time.
func ordered() bool {
	a := time.Now()
	b := time.Now()
	return a.Before(b) && b.Sub(a) >= 0 && !a.Equal(b.Add(time.Hour))
}

// A stripped reading compared with a time from elsewhere: both are wall times.
func pastMidnight(midnight time.Time) bool { return time.Now().Truncate(time.Hour).After(midnight) }

// Arithmetic on one reading is not an interval.
func bucket() int64 { return time.Now().Unix() / 60 * 60 }
