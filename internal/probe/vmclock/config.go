package vmclock

import (
	"errors"
	"fmt"
	"path/filepath"
	"time"
)

// SourceName is the source's name in readings, metrics and stepdown events.
const SourceName = "vmclock"

// DefaultPath is the device ptp_vmclock creates (Linux 6.13 and later).
const DefaultPath = "/dev/vmclock0"

// Modes of the `vmclock:` section.
const (
	// ModeAuto reads the device when there is one and says nothing when
	// there is none: most machines are not VMs with VMClock.
	ModeAuto = "auto"
	// ModeOn expects the device: its absence is an error (logged, and a
	// reading that is found but not up).
	ModeOn = "on"
	// ModeOff turns the source off.
	ModeOff = "off"
)

// Config is the `vmclock:` section of clockwatch's configuration.
type Config struct {
	// Mode is auto (the default), on or off.
	Mode string `yaml:"mode"`
	// Path is the device.
	Path string `yaml:"path"`
	// PollInterval is how often the page is read. A read costs about a
	// hundred nanoseconds but wakes the process: 100 ms keeps a migration's
	// stepdown within about a tenth of a second of the guest's resume for
	// ten wake-ups a second, and only on machines that have the device.
	PollInterval time.Duration `yaml:"poll_interval"`
}

// DefaultConfig returns the configuration used when the file says nothing.
func DefaultConfig() Config {
	return Config{Mode: ModeAuto, Path: DefaultPath, PollInterval: 100 * time.Millisecond}
}

// Enabled reports whether the source runs.
func (c Config) Enabled() bool { return c.Mode != ModeOff }

// Validate reports every problem, naming each field by its YAML path under
// `vmclock:`.
func (c Config) Validate() error {
	var errs []error
	switch c.Mode {
	case ModeAuto, ModeOn, ModeOff:
	default:
		errs = append(errs, fmt.Errorf("vmclock.mode: must be auto, on or off, got %q", c.Mode))
	}
	if !filepath.IsAbs(c.Path) {
		errs = append(errs, fmt.Errorf("vmclock.path: must be an absolute path, got %q", c.Path))
	}
	if c.PollInterval < time.Millisecond || c.PollInterval > 10*time.Second {
		errs = append(errs, fmt.Errorf("vmclock.poll_interval: must be between 1ms and 10s, got %s", c.PollInterval))
	}
	return errors.Join(errs...)
}
