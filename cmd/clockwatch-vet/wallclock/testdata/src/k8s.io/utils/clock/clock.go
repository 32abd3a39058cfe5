// Package clock is a stub of k8s.io/utils/clock.
package clock

import "time"

// PassiveClock reads the time.
type PassiveClock interface {
	Now() time.Time
	Since(time.Time) time.Duration
}

// RealClock is the real clock.
type RealClock struct{}

// Now is time.Now.
func (RealClock) Now() time.Time { return time.Now() }

// Since is time.Since.
func (RealClock) Since(ts time.Time) time.Duration { return time.Since(ts) }
