package ntpd

import (
	"errors"
	"fmt"
	"net"
	"time"

	"github.com/clockwatch/clockwatch/internal/timesource"
)

// AddressAuto makes clockwatch look for ntpd at DefaultAddress: found
// once it answers a mode 6 query there, absent (raising nothing, exporting
// nothing) until then.
const AddressAuto = "auto"

// DefaultAddress is where "auto" looks for ntpd (or ntpsec).
const DefaultAddress = "127.0.0.1:123"

// Config is the `ntpd:` section of clockwatch's configuration.
type Config struct {
	// Enabled turns the ntpd poller on. With the address "auto" a node
	// without ntpd costs one mode 6 query every 30 s and reports nothing.
	Enabled bool `yaml:"enabled"`
	// Address is "auto" or ntpd's host:port, on loopback (ntpd answers mode
	// 6 queries from localhost unless `restrict ... noquery` says
	// otherwise). A pinned address that does not answer is reported down.
	Address string `yaml:"address"`
	// PollInterval is how often ntpd is read.
	PollInterval time.Duration `yaml:"poll_interval"`
	// Timeout bounds each request.
	Timeout time.Duration `yaml:"timeout"`
	// Role says what ntpd's readings may do: "authoritative" (the
	// default: they may trigger a stepdown) or "second_opinion".
	Role string `yaml:"role"`
}

// SourceRole is Role as a timesource.Role (authoritative unless valid and
// second_opinion).
func (c Config) SourceRole() timesource.Role {
	r, err := timesource.ParseRole(c.Role)
	if err != nil {
		return timesource.Authoritative
	}
	return r
}

// DefaultConfig returns the configuration used when the file says nothing.
func DefaultConfig() Config {
	return Config{Enabled: true, Address: AddressAuto, PollInterval: 5 * time.Second, Timeout: 500 * time.Millisecond,
		Role: timesource.Authoritative.String()}
}

// Validate reports every problem, naming each field by its YAML path under
// `ntpd:`.
func (c Config) Validate() error {
	var errs []error
	if _, err := timesource.ParseRole(c.Role); err != nil {
		errs = append(errs, fmt.Errorf("ntpd.role: %w", err))
	}
	if c.Address == AddressAuto {
		// found at DefaultAddress
	} else if host, port, err := net.SplitHostPort(c.Address); err != nil || port == "" {
		errs = append(errs, fmt.Errorf(`ntpd.address: must be "auto" or host:port, got %q`, c.Address))
	} else if ip := net.ParseIP(host); host != "localhost" && (ip == nil || !ip.IsLoopback()) {
		errs = append(errs, fmt.Errorf("ntpd.address: must be on loopback (mode 6 is for the local ntpd), got %q", c.Address))
	}
	if c.PollInterval < 100*time.Millisecond || c.PollInterval > time.Hour {
		errs = append(errs, fmt.Errorf("ntpd.poll_interval: must be between 100ms and 1h (each poll is a round of mode 6 requests), got %s", c.PollInterval))
	}
	if c.Timeout < time.Millisecond {
		errs = append(errs, fmt.Errorf("ntpd.timeout: must be at least 1ms, got %s", c.Timeout))
	} else if c.PollInterval > 0 && c.Timeout > c.PollInterval {
		errs = append(errs, fmt.Errorf("ntpd.timeout: must not exceed ntpd.poll_interval (%s), got %s", c.PollInterval, c.Timeout))
	}
	return errors.Join(errs...)
}

// HostPort is the address polled: the pinned one, or DefaultAddress.
func (c Config) HostPort() string {
	if c.Address == AddressAuto {
		return DefaultAddress
	}
	return c.Address
}
