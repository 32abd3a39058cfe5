package leader

import (
	"errors"
	"fmt"
	"time"
)

// LeaseClock names the clock a node judges its own lease with.
type LeaseClock string

// The lease clocks.
const (
	// LeaseClockWall judges the lease with the wall clock, like the
	// incident's lock client: a step back stretches the lease the node
	// believes it holds.
	LeaseClockWall LeaseClock = "wall"
	// LeaseClockMonotonic judges the lease with the monotonic clock and
	// also ends it when etcd's client gives up on the lease.
	LeaseClockMonotonic LeaseClock = "monotonic"
)

// Config is the behaviour of one Node.
type Config struct {
	// Name identifies the node in the election and in the ledger.
	Name string `yaml:"name"`
	// Election is the etcd key prefix the nodes campaign under.
	Election string `yaml:"election"`
	// TTL is the lease's time to live; etcd counts it in whole seconds.
	TTL time.Duration `yaml:"ttl"`
	// KeepAlive is how often the node renews its lease. etcd's client
	// renews every TTL/3 on its own; a shorter KeepAlive adds renewals.
	KeepAlive time.Duration `yaml:"keepalive"`
	// LeaseClock is the clock the node judges its lease with.
	LeaseClock LeaseClock `yaml:"lease_clock"`
	// Fencing makes every write carry the leader's fencing token, checked
	// by the store. Off, writes go in unguarded (--no-fencing).
	Fencing bool `yaml:"fencing"`
	// Clockwatch makes the node follow its ClockGuard. Off, the node
	// ignores clockwatch (--no-clockwatch), as in the incident.
	Clockwatch bool `yaml:"clockwatch"`
	// WriteInterval is how often the leader books.
	WriteInterval time.Duration `yaml:"write_interval"`
	// Entries is how many ledger entries each booking writes.
	Entries int `yaml:"entries"`
	// ReleaseTimeout bounds resigning and revoking the lease on stepdown;
	// etcd may be unreachable then.
	ReleaseTimeout time.Duration `yaml:"release_timeout"`
}

// DefaultConfig returns the incident's settings: a 15 s lease renewed every
// 5 s, fencing and clockwatch on.
func DefaultConfig() Config {
	return Config{
		Name:           "node",
		Election:       "/clockwatch/leader/",
		TTL:            15 * time.Second,
		KeepAlive:      5 * time.Second,
		LeaseClock:     LeaseClockMonotonic,
		Fencing:        true,
		Clockwatch:     true,
		WriteInterval:  20 * time.Millisecond,
		Entries:        4,
		ReleaseTimeout: time.Second,
	}
}

// Validate reports the first setting that cannot work, naming its YAML key.
func (c Config) Validate() error {
	var errs []error
	if c.Name == "" {
		errs = append(errs, errors.New("name: must not be empty"))
	}
	if c.Election == "" {
		errs = append(errs, errors.New("election: must not be empty"))
	}
	if c.TTL < time.Second || c.TTL%time.Second != 0 {
		errs = append(errs, fmt.Errorf("ttl: must be a whole number of seconds, at least 1s, got %s", c.TTL))
	}
	if c.KeepAlive <= 0 {
		errs = append(errs, fmt.Errorf("keepalive: must be positive, got %s", c.KeepAlive))
	} else if c.TTL > 0 && 3*c.KeepAlive > c.TTL {
		errs = append(errs, fmt.Errorf("keepalive: must be at most a third of ttl (%s), got %s", c.TTL, c.KeepAlive))
	}
	switch c.LeaseClock {
	case LeaseClockWall, LeaseClockMonotonic:
	default:
		errs = append(errs, fmt.Errorf("lease_clock: must be %q or %q, got %q", LeaseClockWall, LeaseClockMonotonic, c.LeaseClock))
	}
	if c.WriteInterval <= 0 {
		errs = append(errs, fmt.Errorf("write_interval: must be positive, got %s", c.WriteInterval))
	}
	if c.Entries < 1 {
		errs = append(errs, fmt.Errorf("entries: must be at least 1, got %d", c.Entries))
	}
	if c.ReleaseTimeout <= 0 {
		errs = append(errs, fmt.Errorf("release_timeout: must be positive, got %s", c.ReleaseTimeout))
	}
	return errors.Join(errs...)
}
