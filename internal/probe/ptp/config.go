package ptp

import (
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/clockwatch/clockwatch/internal/timesource"
)

// AddressAuto makes clockwatch look for ptp4l at its default socket,
// DefaultSocket, on every poll; while there is none the source is absent.
const AddressAuto = "auto"

// DefaultSocket is ptp4l's default management socket (its uds_address).
const DefaultSocket = "/var/run/ptp4l"

// Config is the poller's part of the `ptp:` section of clockwatch's
// configuration; the judges' part (ptp.triggers, ptp.health) is the
// registry's (timesources.PTP embeds timesources.Judges beside it), which
// the configuration converts into the policy's and health's own types: a
// source does not depend on its judges.
type Config struct {
	// Common is the block every source shares: mode (auto: a node
	// without ptp4l costs one stat a poll and reports nothing), the older
	// enabled, role (authoritative by default), poll_interval and timeout
	// (of each request).
	timesource.Common `yaml:",inline"`
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
}

// DefaultConfig returns the configuration used when the file says nothing.
func DefaultConfig() Config {
	return Config{Common: timesource.Auto(timesource.Authoritative, time.Second, 500*time.Millisecond), Address: AddressAuto}
}

// SocketPath is the socket polled: the pinned path, or DefaultSocket.
func (c Config) SocketPath() string {
	if c.Address == AddressAuto {
		return DefaultSocket
	}
	return c.Address
}

// expected reports whether ptp4l is expected (an address given, or mode
// on): its absence is then a failure, not silence.
func (c Config) expected() bool { return c.Address != AddressAuto || c.Pinned() }

// Validate reports every problem, naming each field by its YAML path under
// `ptp:`.
func (c Config) Validate() error {
	errs := []error{c.Common.Validate("ptp", timesource.Limits{MinPoll: 100 * time.Millisecond, MaxPoll: time.Hour,
		Why: "each poll is a round of management requests"})}
	if c.Address != AddressAuto && !strings.HasPrefix(c.Address, "/") {
		errs = append(errs, fmt.Errorf(`ptp.address: must be "auto" or the absolute path of ptp4l's socket (uds_address), got %q`, c.Address))
	}
	if c.Domain < 0 || c.Domain > 255 {
		errs = append(errs, fmt.Errorf("ptp.domain: must be a PTP domain number, 0-255, got %d", c.Domain))
	}
	if c.ReplySocketDir != "" && !strings.HasPrefix(c.ReplySocketDir, "/") {
		errs = append(errs, fmt.Errorf("ptp.reply_socket_dir: must be an absolute path, got %q", c.ReplySocketDir))
	}
	return errors.Join(errs...)
}
