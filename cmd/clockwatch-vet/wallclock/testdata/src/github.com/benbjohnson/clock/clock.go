// Package clock is a stub of github.com/benbjohnson/clock: the analyzer
// models it by name.
package clock

import "time"

// Clock is the library's clock.
type Clock interface {
	Now() time.Time
	Since(t time.Time) time.Duration
	Ticker(d time.Duration) *Ticker
}

// Ticker is the library's ticker.
type Ticker struct {
	C <-chan time.Time
}

// Mock is the library's fake clock.
type Mock struct{ now time.Time }

// Now is the fake time.
func (m *Mock) Now() time.Time { return m.now }

// New returns the real clock.
func New() Clock { return nil }
