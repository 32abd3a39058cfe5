package replay

import (
	"context"
	"time"

	"github.com/clockwatch/clockwatch/examples/leader"
)

// ManualClockwatch stands in for a clockwatch daemon: Step turns its guard to
// stepdown at once and back to ok after hold, as a drill does.
type ManualClockwatch struct {
	guard leader.ManualGuard
}

var _ Clockwatch = (*ManualClockwatch)(nil)

// Guard implements Clockwatch.
func (m *ManualClockwatch) Guard() leader.ClockGuard { return &m.guard }

// Step implements Clockwatch.
func (m *ManualClockwatch) Step(_ context.Context, _, hold time.Duration) error {
	m.guard.Stepdown()
	time.AfterFunc(hold, m.guard.Resume)
	return nil
}

// ManualClockwatches is an Env.Clockwatch that gives each node a new
// ManualClockwatch.
func ManualClockwatches(context.Context, string) (Clockwatch, error) {
	return &ManualClockwatch{}, nil
}
