package step

import (
	"fmt"
	"math"
	"time"
)

// ConfigKey is the top-level YAML key this package's Config is expected under.
const ConfigKey = "step"

// Config sets how often the clocks are sampled and what counts as a step.
type Config struct {
	// Interval is how often the sampler reads the clocks when no clock-set
	// mark wakes it earlier. It is not in the step: section: the daemon
	// sets it from clock.sample_interval, which the scrape-time gauges
	// share.
	Interval time.Duration `yaml:"-"`
	// IdleInterval is how often the sampler reads the clocks while the
	// clock-set watcher is watching and no burst is under way
	// (clock.idle_sample_interval); at most Interval means always Interval.
	IdleInterval time.Duration `yaml:"-"`
	// MaxSlewRate is the largest rate (a ratio: 5e-4 is 500 ppm) at which the
	// REALTIME−BOOTTIME gap may move legitimately. A change of the gap that
	// sampling alone sees is a step only when it exceeds this rate times the
	// time between the samples, plus the read uncertainty and MinStep. With a
	// clock-set mark the allowance is not applied.
	MaxSlewRate float64 `yaml:"max_slew_rate"`
	// MinStep is the smallest change of the gap, beyond the samples' read
	// uncertainty, that counts as a step even with a clock-set mark.
	MinStep time.Duration `yaml:"min_step"`
	// SlewWindow is the span over which the slew rate of the gap is measured
	// for the slew-rate gauge: long enough for read noise to average out.
	SlewWindow time.Duration `yaml:"slew_window"`
}

// DefaultConfig returns the defaults: sample every 100 ms (every 10 s while
// the clock-set watcher watches and nothing happened lately), a 500 ppm slew
// allowance for sampling-only detection (the kernel PLL's and adjtime()'s
// largest rate; see docs/step-detection.md for why not chrony's 83,333 ppm),
// 10 µs minimum step, a 10 s slew-rate window.
func DefaultConfig() Config {
	return Config{
		Interval:     100 * time.Millisecond,
		IdleInterval: 10 * time.Second,
		MaxSlewRate:  500e-6,
		MinStep:      10 * time.Microsecond,
		SlewWindow:   10 * time.Second,
	}
}

// Validate reports the first invalid field, named by its YAML path.
func (c Config) Validate() error {
	switch {
	case c.Interval <= 0:
		return fmt.Errorf("clock.sample_interval: must be positive, got %v", c.Interval)
	case c.Interval > time.Minute:
		return fmt.Errorf("clock.sample_interval: must be at most 1m, got %v", c.Interval)
	case math.IsNaN(c.MaxSlewRate) || c.MaxSlewRate < 0 || c.MaxSlewRate > 0.5:
		return fmt.Errorf("%s.max_slew_rate: must be a ratio between 0 and 0.5 (0.083333 is 83,333 ppm), got %v", ConfigKey, c.MaxSlewRate)
	case c.MinStep < 0:
		return fmt.Errorf("%s.min_step: must not be negative, got %v", ConfigKey, c.MinStep)
	case c.MinStep > time.Second:
		return fmt.Errorf("%s.min_step: must be at most 1s, got %v", ConfigKey, c.MinStep)
	case c.SlewWindow < c.Interval:
		return fmt.Errorf("%s.slew_window: must be at least clock.sample_interval (%v), got %v", ConfigKey, c.Interval, c.SlewWindow)
	case c.SlewWindow > time.Hour:
		return fmt.Errorf("%s.slew_window: must be at most 1h, got %v", ConfigKey, c.SlewWindow)
	}
	return nil
}
