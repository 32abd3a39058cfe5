package sntp

import (
	"errors"
	"fmt"
	"net"
	"time"

	"github.com/clockwatch/clockwatch/internal/timesource"
)

// Config is the `ntp_probes:` section of clockwatch's configuration.
type Config struct {
	// Servers are queried each Interval: "host" (port 123) or "host:port".
	// None by default: clockwatch sends no NTP traffic unless told to.
	Servers []string `yaml:"servers"`
	// Interval is the time between rounds of queries.
	Interval time.Duration `yaml:"interval"`
	// Samples is how many queries each round sends to each server; the one
	// with the smallest round trip is kept.
	Samples int `yaml:"samples"`
	// SampleSpacing is the pause between the samples of one server: public
	// servers answer a faster burst with a RATE kiss-o'-death.
	SampleSpacing time.Duration `yaml:"sample_spacing"`
	// Timeout bounds each query.
	Timeout time.Duration `yaml:"timeout"`
	// Role says what the probes' readings may do: "second_opinion" (the
	// default) judges them in the health verdict and alerts, but steps no
	// one down; "authoritative" lets a server's offset, error bound or
	// loss trigger a stepdown like a time daemon's.
	Role string `yaml:"role"`
}

// DefaultConfig returns the configuration used when the file says nothing.
func DefaultConfig() Config {
	return Config{
		Interval:      time.Minute,
		Samples:       4,
		SampleSpacing: 2 * time.Second,
		Timeout:       time.Second,
		Role:          RoleSecondOpinion,
	}
}

// On reports whether the probes run: when ntp_probes.servers lists a
// server. The section has no mode: its list is its switch.
func (c Config) On() bool { return len(c.Servers) > 0 }

// Turn turns the probes off (no server) or, when servers are listed, on,
// as --[no-]collector.ntp_probes does.
func (c *Config) Turn(on bool) error {
	if !on {
		c.Servers = nil
	} else if len(c.Servers) == 0 {
		return errors.New("--collector.ntp_probes: ntp_probes.servers lists no server to probe")
	}
	return nil
}

// Validate reports every problem, naming each field by its YAML path under
// `ntp_probes:`.
func (c Config) Validate() error {
	var errs []error
	seen := map[string]bool{}
	for i, s := range c.Servers {
		if _, err := splitServer(s); err != nil {
			errs = append(errs, fmt.Errorf("ntp_probes.servers[%d]: %w", i, err))
		}
		if seen[s] {
			errs = append(errs, fmt.Errorf("ntp_probes.servers[%d]: %q is listed twice", i, s))
		}
		seen[s] = true
	}
	if c.Interval < time.Second || c.Interval > 24*time.Hour {
		errs = append(errs, fmt.Errorf("ntp_probes.interval: must be between 1s and 24h (servers rate-limit faster clients), got %s", c.Interval))
	}
	if c.Samples < 1 || c.Samples > 16 {
		errs = append(errs, fmt.Errorf("ntp_probes.samples: must be between 1 and 16, got %d", c.Samples))
	}
	if c.SampleSpacing < 0 || c.SampleSpacing > time.Minute {
		errs = append(errs, fmt.Errorf("ntp_probes.sample_spacing: must be between 0s and 1m, got %s", c.SampleSpacing))
	}
	if c.Timeout < time.Millisecond || c.Timeout > time.Minute {
		errs = append(errs, fmt.Errorf("ntp_probes.timeout: must be between 1ms and 1m, got %s", c.Timeout))
	}
	if _, err := timesource.ParseRole(c.Role); err != nil {
		errs = append(errs, fmt.Errorf("ntp_probes.role: %w", err))
	}
	if c.Interval > 0 && c.Samples >= 1 && c.Timeout > 0 && c.SampleSpacing >= 0 {
		if round := time.Duration(c.Samples)*c.Timeout + time.Duration(c.Samples-1)*c.SampleSpacing; round > c.Interval {
			errs = append(errs, fmt.Errorf("ntp_probes.interval: must be at least samples × timeout + (samples-1) × sample_spacing = %s, got %s", round, c.Interval))
		}
	}
	return errors.Join(errs...)
}

// splitServer checks a server entry and returns it as host:port.
func splitServer(s string) (string, error) {
	if s == "" {
		return "", errors.New("empty server name")
	}
	if _, port, err := net.SplitHostPort(s); err == nil {
		if port == "" {
			return "", fmt.Errorf("%q has an empty port", s)
		}
		return s, nil
	}
	if ip := net.ParseIP(s); ip != nil {
		return net.JoinHostPort(s, "123"), nil
	}
	for _, r := range s {
		if r == ':' || r == '/' || r == ' ' {
			return "", fmt.Errorf("%q is not a host name, IP address or host:port", s)
		}
	}
	return net.JoinHostPort(s, "123"), nil
}
