// Package clockwork is a stub of github.com/jonboulle/clockwork.
package clockwork

import "time"

// Clock is the library's clock.
type Clock interface {
	Now() time.Time
	Since(t time.Time) time.Duration
	NewTicker(d time.Duration) Ticker
}

// Ticker is the library's ticker.
type Ticker interface {
	Chan() <-chan time.Time
	Stop()
}
