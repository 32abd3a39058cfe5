package ntpd

import (
	"errors"
	"fmt"
	"net"
	"time"
)

// Config is the `ntpd:` section of clockwatch's configuration.
type Config struct {
	// Enabled turns the ntpd poller on. Off by default: most nodes run
	// chrony, and a node without ntpd would only report it down.
	Enabled bool `yaml:"enabled"`
	// Address is ntpd's host:port, on loopback (ntpd answers mode 6
	// queries from localhost unless `restrict ... noquery` says otherwise).
	Address string `yaml:"address"`
	// PollInterval is how often ntpd is read.
	PollInterval time.Duration `yaml:"poll_interval"`
	// Timeout bounds each request.
	Timeout time.Duration `yaml:"timeout"`
}

// DefaultConfig returns the configuration used when the file says nothing.
func DefaultConfig() Config {
	return Config{Address: "127.0.0.1:123", PollInterval: 5 * time.Second, Timeout: 500 * time.Millisecond}
}

// Validate reports every problem, naming each field by its YAML path under
// `ntpd:`.
func (c Config) Validate() error {
	var errs []error
	if host, port, err := net.SplitHostPort(c.Address); err != nil || port == "" {
		errs = append(errs, fmt.Errorf("ntpd.address: must be host:port, got %q", c.Address))
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
