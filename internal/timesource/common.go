package timesource

import (
	"errors"
	"fmt"
	"time"
)

// The modes of a source's section (its mode key).
const (
	// ModeAuto looks for the source where it would be and says nothing
	// while it is not there: a host kept by another time daemon is no fault.
	ModeAuto = "auto"
	// ModeOn expects the source: its absence is a failure (logged, and a
	// reading that is found but not up).
	ModeOn = "on"
	// ModeOff does not run the source.
	ModeOff = "off"
)

// Common is the block every polled source's section embeds, inline (its
// keys are the section's own: chrony.mode, ptp.poll_interval): whether the
// source runs, what its readings may do, how often it is polled and how
// long a poll may take. The registry (internal/timesources) reads it the
// same way for every source.
type Common struct {
	// Mode is auto (the default), on or off.
	Mode string `yaml:"mode"`
	// Enabled is the older spelling of Mode, kept for the files that
	// have it (chrony, ntpd and ptp had enabled before mode): false is
	// mode off, true leaves Mode as it is. nil: not given.
	Enabled *bool `yaml:"enabled,omitempty"`
	// Role says what the source's readings may do: "authoritative" (they
	// may trigger a stepdown) or "second_opinion" (judged and alerted on,
	// never a stepdown).
	Role string `yaml:"role"`
	// PollInterval is how often the source is read.
	PollInterval time.Duration `yaml:"poll_interval"`
	// Timeout bounds each poll (0, and not written, for a source whose
	// poll does not wait).
	Timeout time.Duration `yaml:"timeout,omitempty"`
}

// Auto is the Common a source's DefaultConfig starts from: mode auto, the
// source's role, its poll interval and its timeout (0 for a source whose
// poll does not wait).
func Auto(role Role, pollInterval, timeout time.Duration) Common {
	return Common{Mode: ModeAuto, Role: role.String(), PollInterval: pollInterval, Timeout: timeout}
}

// On reports whether the source runs: its mode is auto or on (the zero
// Common is off), and the older enabled does not say false.
func (c Common) On() bool {
	return (c.Mode == ModeAuto || c.Mode == ModeOn) && (c.Enabled == nil || *c.Enabled)
}

// Pinned reports whether the source is expected (mode on): its absence is
// then a failure, not silence.
func (c Common) Pinned() bool { return c.On() && c.Mode == ModeOn }

// SourceRole is Role as a Role (authoritative unless valid and
// second_opinion).
func (c Common) SourceRole() Role {
	r, err := ParseRole(c.Role)
	if err != nil {
		return Authoritative
	}
	return r
}

// Fold folds the older enabled into Mode (false: off; true: as Mode says),
// once the section is decoded and valid, so that a file that says
// `enabled: true` is the same configuration as one that does not.
func (c *Common) Fold() {
	if c.Enabled != nil && !*c.Enabled {
		c.Mode = ModeOff
	}
	c.Enabled = nil
}

// Turn turns the source on (off: to auto) or off, as a --[no-]collector
// switch does; the older enabled key is folded into the mode. It never
// fails: the error is that of sections that cannot always be turned on.
func (c *Common) Turn(on bool) error {
	switch {
	case !on:
		c.Mode = ModeOff
	case !c.On():
		c.Mode = ModeAuto
	}
	c.Enabled = nil
	return nil
}

// Limits are a source's bounds on its common block.
type Limits struct {
	// MinPoll and MaxPoll bound poll_interval; Why says what a poll costs,
	// for the error ("" says nothing).
	MinPoll, MaxPoll time.Duration
	Why              string
	// NoTimeout is set for a source whose poll does not wait (VMClock's
	// page is memory): its timeout must stay 0.
	NoTimeout bool
}

// Validate reports every problem with the block of the section named
// section, naming each key by its YAML path (section.poll_interval).
func (c Common) Validate(section string, l Limits) error {
	var errs []error
	bad := func(key, format string, args ...any) {
		errs = append(errs, fmt.Errorf("%s.%s: "+format, append([]any{section, key}, args...)...))
	}
	switch c.Mode {
	case ModeAuto, ModeOn, ModeOff:
	default:
		bad("mode", "must be auto, on or off, got %q", c.Mode)
	}
	if e := c.Enabled; e != nil && (*e && c.Mode == ModeOff || !*e && c.Mode == ModeOn) {
		bad("enabled", "%v contradicts %s.mode: %s (enabled is the older spelling of mode: give one of them)", *c.Enabled, section, c.Mode)
	}
	if _, err := ParseRole(c.Role); err != nil {
		bad("role", "%w", err)
	}
	if p := c.PollInterval; p < l.MinPoll || p > l.MaxPoll {
		why := ""
		if l.Why != "" {
			why = " (" + l.Why + ")"
		}
		bad("poll_interval", "must be between %s and %s%s, got %s", short(l.MinPoll), short(l.MaxPoll), why, p)
	}
	switch {
	case l.NoTimeout && c.Timeout != 0:
		bad("timeout", "must be 0: a poll of %s does not wait, got %s", section, c.Timeout)
	case l.NoTimeout:
	case c.Timeout < time.Millisecond:
		bad("timeout", "must be at least 1ms, got %s", c.Timeout)
	case c.PollInterval > 0 && c.Timeout > c.PollInterval:
		bad("timeout", "must not exceed %s.poll_interval (%s), got %s", section, c.PollInterval, c.Timeout)
	}
	return errors.Join(errs...)
}

// short writes a bound as people do: 1h, not 1h0m0s.
func short(d time.Duration) string {
	s := d.String()
	for _, z := range []string{"m0s", "h0m"} {
		if len(s) > len(z) && s[len(s)-len(z):] == z {
			s = s[:len(s)-len(z)+1]
		}
	}
	return s
}
