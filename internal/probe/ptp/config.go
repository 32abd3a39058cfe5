package ptp

import (
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/clockwatch/clockwatch/internal/stepdown/policy"
)

// AddressAuto makes clockwatch look for ptp4l at its default socket,
// DefaultSocket, on every poll; while there is none the source is absent.
const AddressAuto = "auto"

// DefaultSocket is ptp4l's default management socket (its uds_address).
const DefaultSocket = "/var/run/ptp4l"

// Config is the `ptp:` section of clockwatch's configuration.
type Config struct {
	// Enabled turns the ptp4l poller on. With the address "auto" a node
	// without ptp4l costs one stat a poll and reports nothing.
	Enabled bool `yaml:"enabled"`
	// Address is "auto" or the absolute path of ptp4l's management socket
	// (its uds_address). A pinned path that cannot be read is reported
	// down; "auto" without a socket is absent.
	Address string `yaml:"address"`
	// Domain is ptp4l's domainNumber: ptp4l ignores management messages
	// of another domain without a word.
	Domain int `yaml:"domain"`
	// ReplySocketDir is where clockwatch binds the socket ptp4l replies
	// to. Empty: an abstract socket (no file, no permissions), which works
	// when ptp4l runs in clockwatch's network namespace; set a directory
	// ptp4l can write to when it does not (a container, a test).
	ReplySocketDir string `yaml:"reply_socket_dir"`
	// PollInterval is how often ptp4l is read.
	PollInterval time.Duration `yaml:"poll_interval"`
	// Timeout bounds each request.
	Timeout time.Duration `yaml:"timeout"`
	// Triggers judge ptp4l in place of stepdown.triggers' offset,
	// error_bound and unsynchronized (whose 1 s and 60 s suit NTP): PTP
	// holds the clock within nanoseconds (hardware timestamps) to tens of
	// microseconds (software ones), so an offset over 100 µs means the
	// servo has lost its lock. Unsynchronized is the port not SLAVE (nor
	// MASTER as a synchronised grandmaster).
	Triggers policy.SourceTriggers `yaml:"triggers"`
	// Health holds the thresholds `clockwatch status` judges ptp4l by, in
	// place of health's.
	Health Health `yaml:"health"`
}

// Health is the `ptp.health:` section: health's thresholds for ptp4l.
type Health struct {
	OffsetWarning      time.Duration `yaml:"offset_warning"`
	OffsetCritical     time.Duration `yaml:"offset_critical"`
	ErrorBoundWarning  time.Duration `yaml:"error_bound_warning"`
	ErrorBoundCritical time.Duration `yaml:"error_bound_critical"`
}

// DefaultTriggers are ptp4l's triggers unless configured: an offset over
// 100 µs, an error bound (|offset| + mean path delay + the grandmaster's
// accuracy) over 1 ms, the port not SLAVE for over 10 s (ptp4l takes a few
// announce intervals to choose a master; longer is a lost master).
func DefaultTriggers() policy.SourceTriggers {
	return policy.SourceTriggers{
		Offset:         policy.Threshold{Enabled: true, Threshold: 100 * time.Microsecond},
		ErrorBound:     policy.Threshold{Enabled: true, Threshold: time.Millisecond},
		Unsynchronized: policy.Grace{Enabled: true, Grace: 10 * time.Second},
	}
}

// DefaultHealth are ptp4l's health thresholds unless configured: a warning
// from 10 µs of offset (software timestamps hold a quiet host within a few
// µs), critical from the offset trigger's 100 µs; the error bound warns from
// 100 µs, critical from the trigger's 1 ms.
func DefaultHealth() Health {
	return Health{OffsetWarning: 10 * time.Microsecond, OffsetCritical: 100 * time.Microsecond,
		ErrorBoundWarning: 100 * time.Microsecond, ErrorBoundCritical: time.Millisecond}
}

// DefaultConfig returns the configuration used when the file says nothing.
func DefaultConfig() Config {
	return Config{Enabled: true, Address: AddressAuto, PollInterval: time.Second, Timeout: 500 * time.Millisecond,
		Triggers: DefaultTriggers(), Health: DefaultHealth()}
}

// SocketPath is the socket polled: the pinned path, or DefaultSocket.
func (c Config) SocketPath() string {
	if c.Address == AddressAuto {
		return DefaultSocket
	}
	return c.Address
}

// Validate reports every problem, naming each field by its YAML path under
// `ptp:`.
func (c Config) Validate() error {
	var errs []error
	if c.Address != AddressAuto && !strings.HasPrefix(c.Address, "/") {
		errs = append(errs, fmt.Errorf(`ptp.address: must be "auto" or the absolute path of ptp4l's socket (uds_address), got %q`, c.Address))
	}
	if c.Domain < 0 || c.Domain > 255 {
		errs = append(errs, fmt.Errorf("ptp.domain: must be a PTP domain number, 0-255, got %d", c.Domain))
	}
	if c.ReplySocketDir != "" && !strings.HasPrefix(c.ReplySocketDir, "/") {
		errs = append(errs, fmt.Errorf("ptp.reply_socket_dir: must be an absolute path, got %q", c.ReplySocketDir))
	}
	if c.PollInterval < 100*time.Millisecond || c.PollInterval > time.Hour {
		errs = append(errs, fmt.Errorf("ptp.poll_interval: must be between 100ms and 1h (each poll is a round of management requests), got %s", c.PollInterval))
	}
	if c.Timeout < time.Millisecond {
		errs = append(errs, fmt.Errorf("ptp.timeout: must be at least 1ms, got %s", c.Timeout))
	} else if c.PollInterval > 0 && c.Timeout > c.PollInterval {
		errs = append(errs, fmt.Errorf("ptp.timeout: must not exceed ptp.poll_interval (%s), got %s", c.PollInterval, c.Timeout))
	}
	errs = append(errs, c.Triggers.Validate("ptp.triggers"))
	h := c.Health
	if h.OffsetWarning <= 0 {
		errs = append(errs, fmt.Errorf("ptp.health.offset_warning: must be positive, got %s", h.OffsetWarning))
	}
	if h.OffsetCritical < h.OffsetWarning {
		errs = append(errs, fmt.Errorf("ptp.health.offset_critical: must not be below ptp.health.offset_warning (%s), got %s", h.OffsetWarning, h.OffsetCritical))
	}
	if h.ErrorBoundWarning <= 0 {
		errs = append(errs, fmt.Errorf("ptp.health.error_bound_warning: must be positive, got %s", h.ErrorBoundWarning))
	}
	if h.ErrorBoundCritical < h.ErrorBoundWarning {
		errs = append(errs, fmt.Errorf("ptp.health.error_bound_critical: must not be below ptp.health.error_bound_warning (%s), got %s", h.ErrorBoundWarning, h.ErrorBoundCritical))
	}
	return errors.Join(errs...)
}
