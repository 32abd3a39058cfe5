package leader

import (
	"testing"
	"time"
)

func TestLeaseViewStep(t *testing.T) {
	t.Parallel()
	const ttl = time.Hour
	tests := []struct {
		name  string
		clock LeaseClock
		step  time.Duration
		lost  bool
		want  bool
	}{
		{name: "wall, no step", clock: LeaseClockWall, want: true},
		{name: "wall, stepped back", clock: LeaseClockWall, step: -12400 * time.Millisecond, want: true},
		{name: "wall, stepped forward past the TTL", clock: LeaseClockWall, step: 2 * ttl, want: false},
		{name: "wall ignores the lost lease", clock: LeaseClockWall, lost: true, want: true},
		{name: "monotonic ignores a step forward", clock: LeaseClockMonotonic, step: 2 * ttl, want: true},
		{name: "monotonic ends with the lost lease", clock: LeaseClockMonotonic, lost: true, want: false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			var c SteppedClock
			v := newLeaseView(tt.clock, &c, ttl)
			c.Step(tt.step)
			if tt.lost {
				v.markLost()
			}
			if got := v.valid(); got != tt.want {
				t.Errorf("valid() = %v, want %v", got, tt.want)
			}
		})
	}
}

// TestLeaseViewStretch shows the incident's arithmetic: after a step back by
// s, a wall-clock view still believes in its lease s after the real expiry,
// while a monotonic one does not.
func TestLeaseViewStretch(t *testing.T) {
	t.Parallel()
	const ttl = 50 * time.Millisecond
	var c SteppedClock
	wall := newLeaseView(LeaseClockWall, &c, ttl)
	mono := newLeaseView(LeaseClockMonotonic, &c, ttl)
	c.Step(-time.Hour)
	time.Sleep(2 * ttl) // the lease's real expiry passes
	if !wall.valid() {
		t.Error("wall-clock view: lease ended after a step back, want it stretched by the step")
	}
	if mono.valid() {
		t.Error("monotonic view: lease still valid after its TTL")
	}
}
