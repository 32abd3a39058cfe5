package vmclock

import (
	"errors"
	"fmt"
	"path/filepath"
	"time"

	"github.com/clockwatch/clockwatch/internal/timesource"
)

// SourceName is the source's name in readings, metrics and stepdown events.
const SourceName = "vmclock"

// DefaultPath is the device ptp_vmclock creates (Linux 6.13 and later).
const DefaultPath = "/dev/vmclock0"

// Modes of the `vmclock:` section (timesource's): auto reads the device
// when there is one and says nothing when there is none (most machines are
// not VMs with VMClock); on expects the device (its absence is an error,
// logged, and a reading that is found but not up); off turns the source
// off.
const (
	ModeAuto = timesource.ModeAuto
	ModeOn   = timesource.ModeOn
	ModeOff  = timesource.ModeOff
)

// Config is the `vmclock:` section of clockwatch's configuration.
type Config struct {
	// Common is the block every source shares: mode (auto, the default,
	// on or off), the older enabled, role (second_opinion by default: the
	// disruption marker steps down whatever the role), poll_interval and
	// timeout (0: a read of the page does not wait). A read costs about a
	// hundred nanoseconds but wakes the process: a poll interval of
	// 100 ms keeps a migration's stepdown within about a tenth of a second
	// of the guest's resume for ten wake-ups a second, and only on
	// machines that have the device.
	timesource.Common `yaml:",inline"`
	// Path is the device.
	Path string `yaml:"path"`
}

// DefaultConfig returns the configuration used when the file says nothing.
func DefaultConfig() Config {
	return Config{Common: timesource.Auto(timesource.SecondOpinion, 100*time.Millisecond, 0), Path: DefaultPath}
}

// Validate reports every problem, naming each field by its YAML path under
// `vmclock:`.
func (c Config) Validate() error {
	errs := []error{c.Common.Validate("vmclock", timesource.Limits{MinPoll: time.Millisecond, MaxPoll: 10 * time.Second, NoTimeout: true})}
	if !filepath.IsAbs(c.Path) {
		errs = append(errs, fmt.Errorf("vmclock.path: must be an absolute path, got %q", c.Path))
	}
	return errors.Join(errs...)
}
