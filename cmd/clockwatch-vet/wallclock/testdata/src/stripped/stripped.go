// Package stripped holds time.Time values that lost their monotonic reading
// and are then compared with another local reading.
package stripped

import (
	"time"
)

func sinceUTC() time.Duration {
	start := time.Now().UTC()
	work()
	return time.Since(start) // want `time.Since\(start\): start has lost its monotonic reading`
}

func work() {}

func roundZero(deadline time.Time) bool {
	return time.Now().Round(0).After(deadline) // want `has lost its monotonic reading`
}

func callRoundZero() bool { return roundZero(time.Now().Add(time.Second)) }

func inLocation(loc *time.Location) time.Duration {
	start := time.Now()
	return time.Now().Sub(start.In(loc)) // want `start.In\(loc\) has lost its monotonic reading`
}

type session struct {
	started time.Time
}

func (s *session) begin() { s.started = time.Now().Truncate(time.Second) }

func (s *session) age() time.Duration {
	return time.Until(s.started) // want `s.started has lost its monotonic reading`
}

func fromUnix() bool {
	at := time.Unix(time.Now().Unix(), 0)
	return at.Before(time.Now()) // want `has lost its monotonic reading`
}

func roundTrip() (bool, error) {
	b, err := time.Now().MarshalText()
	if err != nil {
		return false, err
	}
	var t time.Time
	if err := t.UnmarshalText(b); err != nil {
		return false, err
	}
	return t.Equal(time.Now()), nil // want `t has lost its monotonic reading`
}

func parseRoundTrip() (int, error) {
	t, err := time.Parse(time.RFC3339Nano, time.Now().Format(time.RFC3339Nano))
	if err != nil {
		return 0, err
	}
	return time.Now().Compare(t), nil // want `t has lost its monotonic reading`
}

func addDate() bool {
	tomorrow := time.Now().AddDate(0, 0, 1)
	return time.Now().After(tomorrow) // want `tomorrow has lost its monotonic reading`
}
