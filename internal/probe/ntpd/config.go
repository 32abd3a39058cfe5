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
	// Common is the block every source shares: mode (auto: a node
	// without ntpd costs one mode 6 query every 30 s and reports nothing),
	// the older enabled, role (authoritative by default), poll_interval
	// and timeout (of each request).
	timesource.Common `yaml:",inline"`
	// Address is "auto" or ntpd's host:port, on loopback (ntpd answers mode
	// 6 queries from localhost unless `restrict ... noquery` says
	// otherwise). A pinned address that does not answer is reported down.
	Address string `yaml:"address"`
}

// DefaultConfig returns the configuration used when the file says nothing.
func DefaultConfig() Config {
	return Config{Common: timesource.Auto(timesource.Authoritative, 5*time.Second, 500*time.Millisecond), Address: AddressAuto}
}

// Validate reports every problem, naming each field by its YAML path under
// `ntpd:`.
func (c Config) Validate() error {
	errs := []error{c.Common.Validate("ntpd", timesource.Limits{MinPoll: 100 * time.Millisecond, MaxPoll: time.Hour,
		Why: "each poll is a round of mode 6 requests"})}
	if c.Address == AddressAuto {
		// found at DefaultAddress
	} else if host, port, err := net.SplitHostPort(c.Address); err != nil || port == "" {
		errs = append(errs, fmt.Errorf(`ntpd.address: must be "auto" or host:port, got %q`, c.Address))
	} else if ip := net.ParseIP(host); host != "localhost" && (ip == nil || !ip.IsLoopback()) {
		errs = append(errs, fmt.Errorf("ntpd.address: must be on loopback (mode 6 is for the local ntpd), got %q", c.Address))
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
