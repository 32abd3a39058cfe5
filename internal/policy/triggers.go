package policy

import (
	"errors"
	"fmt"
	"reflect"
	"time"
)

// Config is the policy's configuration: its part of the stepdown section
// of the configuration file (stepdown.hold_down, stepdown.triggers), read
// beside the socket's settings under the same key, and reloaded on SIGHUP.
// The announcer runs the policy with it, whichever transports are on.
type Config struct {
	// HoldDown is how long the clock must stay healthy after the last
	// trigger before the state returns to ok.
	HoldDown time.Duration `yaml:"hold_down"`
	// Triggers configures each trigger.
	Triggers Triggers `yaml:"triggers"`
}

// DefaultHoldDown is stepdown.hold_down unless configured.
const DefaultHoldDown = 30 * time.Second

// DefaultConfig returns the defaults: a 30 s hold-down and DefaultTriggers.
func DefaultConfig() Config {
	return Config{HoldDown: DefaultHoldDown, Triggers: DefaultTriggers()}
}

// MaxHoldDown bounds stepdown.hold_down.
const MaxHoldDown = 24 * time.Hour

// Validate checks the configuration; each error names its field by YAML
// path under section ("stepdown").
func (c Config) Validate(section string) error {
	var errs []error
	if c.HoldDown < 0 || c.HoldDown > MaxHoldDown {
		errs = append(errs, fmt.Errorf("%s.hold_down: must be between %s and %s, got %s", section, time.Duration(0), MaxHoldDown, c.HoldDown))
	}
	if err := c.Triggers.Validate(section + ".triggers"); err != nil {
		errs = append(errs, err)
	}
	return errors.Join(errs...)
}

// Triggers configures the conditions that cause a stepdown. A trigger whose
// Enabled is false ignores its input.
type Triggers struct {
	Step           Threshold `yaml:"step"`
	Offset         Threshold `yaml:"offset"`
	Unsynchronized Grace     `yaml:"unsynchronized"`
	ErrorBound     Threshold `yaml:"error_bound"`
	ProbeLost      Grace     `yaml:"probe_lost"`
	// Suspend fires on a resume from suspend longer than the threshold:
	// CLOCK_MONOTONIC stood still meanwhile, so leases timed with it ran
	// out without the holder noticing.
	Suspend Threshold `yaml:"suspend"`
	// GrandmasterChanged fires when a source's reading names a grandmaster
	// other than the last one it named (timesource.Reading.Grandmaster).
	GrandmasterChanged Switch `yaml:"grandmaster_changed"`
	// VMDisruption fires when a source's disruption marker (VMClock's)
	// changes, also across a restart in the same boot, and holds while a
	// source says its clock is unreliable.
	VMDisruption Switch `yaml:"vm_disruption"`
	// PeerOffset fires when the fleet's majority judge (peers:) has found
	// this clock outside for longer than the grace, and holds until it
	// finds it inside again.
	PeerOffset Grace `yaml:"peer_offset"`
	// Sources replaces Offset, ErrorBound and Unsynchronized for the named
	// sources: a PTP clock runs at nanoseconds to microseconds, where the
	// 1 s that suits NTP means nothing. It is not read from the stepdown
	// section: each source's own section sets it (ptp.triggers), and the
	// configuration copies it here.
	Sources map[string]SourceTriggers `yaml:"-"`
}

// SourceTriggers are the triggers judged per source whose scale depends on
// the source.
type SourceTriggers struct {
	Offset     Threshold `yaml:"offset"`
	ErrorBound Threshold `yaml:"error_bound"`
	// Unsynchronized is, for ptp4l, its port not SLAVE (nor MASTER as a
	// synchronised grandmaster).
	Unsynchronized Grace `yaml:"unsynchronized"`
}

// Validate checks the triggers; errors name the field under prefix (e.g.
// "ptp.triggers").
func (t SourceTriggers) Validate(prefix string) error {
	var errs []error
	for _, row := range TriggerTable() {
		if row.PerSource {
			errs = append(errs, row.source(t).check(prefix, row.Key))
		}
	}
	return errors.Join(errs...)
}

// check says, for an enabled trigger under prefix whose magnitude (its
// threshold or grace) is not positive, which field is wrong.
func (s Setting) check(prefix, key string) error {
	if s.Enabled && s.Unit != "" && s.Limit <= 0 {
		return fmt.Errorf("%s.%s.%s: must be positive when enabled, got %s", prefix, key, s.Unit, s.Limit)
	}
	return nil
}

// For returns the per-source triggers that judge source: its own from
// Sources, else the global ones.
func (t Triggers) For(source string) SourceTriggers {
	if st, ok := t.Sources[source]; ok {
		return st
	}
	return SourceTriggers{Offset: t.Offset, ErrorBound: t.ErrorBound, Unsynchronized: t.Unsynchronized}
}

// Switch is a trigger without a magnitude.
type Switch struct {
	Enabled bool `yaml:"enabled"`
}

// Threshold is a trigger that fires when a magnitude is over Threshold.
type Threshold struct {
	Enabled   bool          `yaml:"enabled"`
	Threshold time.Duration `yaml:"threshold"`
}

// Grace is a trigger that fires when a bad condition has lasted longer than
// Grace.
type Grace struct {
	Enabled bool          `yaml:"enabled"`
	Grace   time.Duration `yaml:"grace"`
}

// DefaultTriggers returns the triggers clockwatch uses unless configured
// otherwise, each row's Default: all enabled, a step over 1 ms, an offset
// over 1 s, unsynchronised for over 60 s, an error bound over 1 s, a probe
// failing for over 10 s, a suspend over 1 ms, a grandmaster changed, a VM
// disruption, outside the fleet for over 10 s.
func DefaultTriggers() Triggers {
	var t Triggers
	for _, row := range TriggerTable() {
		f, _ := settingField(reflect.ValueOf(&t).Elem(), row.Key)
		f.set(row.Default)
	}
	return t
}

// Validate checks the triggers; errors name the field under prefix (the YAML
// path of the triggers, e.g. "stepdown.triggers").
func (t Triggers) Validate(prefix string) error {
	var errs []error
	for _, row := range TriggerTable() {
		errs = append(errs, row.global(t).check(prefix, row.Key))
	}
	// Sources are checked by the sections that set them (ptp.triggers),
	// under their own names.
	return errors.Join(errs...)
}
