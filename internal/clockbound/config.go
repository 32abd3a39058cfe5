package clockbound

import (
	"errors"
	"fmt"
	"path/filepath"
	"strconv"
	"time"
)

// DefaultPath is where the segment lives unless configured: under
// clockwatch's runtime directory, never ClockBound's /var/run/clockbound/shm0
// (ClockBound's daemon wipes a segment there that it did not write).
const DefaultPath = "/run/clockwatch/clockbound/shm0"

// DefaultMaxDriftPPB is the default maximum drift: 15 ppm, what a common
// crystal oscillator holds over its temperature range. (ClockBound's daemon
// defaults to 1 ppm and warns that it is likely wrong.)
const DefaultMaxDriftPPB = 15_000

// Config is the clockbound section of clockwatch's configuration file.
type Config struct {
	// Enabled turns the segment on.
	Enabled bool `yaml:"enabled"`
	// Path is the segment file. The default follows RUNTIME_DIRECTORY.
	Path string `yaml:"path"`
	// Mode is the file's permission bits, in octal: "0644" lets every local
	// user read the bound; "0640" with Group limits it to that group.
	Mode string `yaml:"mode"`
	// Group owns the file (a name or a numeric gid); empty keeps
	// clockwatch's own group.
	Group string `yaml:"group"`
	// MaxDriftPPB is how fast the clock may drift from true time between
	// time-source updates, in parts per billion: the bound grows by this
	// much per second since the last update, and readers grow it the same
	// way after the last write.
	MaxDriftPPB uint32 `yaml:"max_drift_ppb"`
	// Interval is the longest time between two writes while nothing
	// changes: below ClockBound's 5 s after which readers take a
	// synchronized status for free running. A change of the figures is
	// written within a second, a stepdown event at once.
	Interval time.Duration `yaml:"interval"`
}

// DefaultConfig returns the defaults: enabled at DefaultPath, mode 0644,
// 15 ppm, written when the figures change and at least every MaxInterval
// (readers grow the bound themselves between writes; they take a segment
// older than 5 s for free running).
func DefaultConfig() Config {
	return Config{Enabled: true, Path: DefaultPath, Mode: "0644", MaxDriftPPB: DefaultMaxDriftPPB, Interval: MaxInterval}
}

// MaxInterval is the longest Interval: a write 4 s after the last leaves a
// second of ClockBound's 5 s grace for a late tick, so that readers keep
// reading synchronized.
const MaxInterval = 4 * time.Second

// Validate checks the configuration; each error names its field by YAML path.
func (c Config) Validate() error {
	var errs []error
	add := func(format string, args ...any) { errs = append(errs, fmt.Errorf(format, args...)) }
	if c.Path == "" || !filepath.IsAbs(c.Path) {
		add("clockbound.path: must be an absolute path, got %q", c.Path)
	}
	if _, err := c.FileMode(); err != nil {
		add("clockbound.mode: %w", err)
	}
	if c.MaxDriftPPB == 0 || c.MaxDriftPPB >= 1_000_000_000 {
		add("clockbound.max_drift_ppb: must be between 1 and 999999999 (readers refuse 100%% or more), got %d", c.MaxDriftPPB)
	}
	if c.Interval < 10*time.Millisecond || c.Interval > MaxInterval {
		add("clockbound.interval: must be between 10ms and %s (readers take a segment older than 5s for free running), got %s", MaxInterval, c.Interval)
	}
	return errors.Join(errs...)
}

// FileMode parses Mode. Write bits are refused: only clockwatch writes.
func (c Config) FileMode() (uint32, error) {
	m, err := strconv.ParseUint(c.Mode, 8, 32)
	if err != nil || m > 0o777 {
		return 0, fmt.Errorf("must be octal permission bits like \"0644\", got %q", c.Mode)
	}
	if m&0o022 != 0 {
		return 0, fmt.Errorf("must not let the group or others write (a second writer tears the seqlock), got %q", c.Mode)
	}
	return uint32(m), nil
}
