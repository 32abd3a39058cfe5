package chrony

import (
	"errors"
	"fmt"
	"net"
	"strings"
	"syscall"
	"time"

	"github.com/clockwatch/clockwatch/internal/timesource"
)

// AddressAuto makes clockwatch find chronyd by itself: its unix socket when
// it exists, else UDP port 323 on 127.0.0.1 and then [::1].
const AddressAuto = "auto"

// defaultSocketPaths returns the unix socket paths tried, in order, by
// AddressAuto.
func defaultSocketPaths() []string {
	return []string{"/run/chrony/chronyd.sock", "/var/run/chrony/chronyd.sock"}
}

// defaultUDPAddresses returns the command ports tried, in order, by
// AddressAuto when no unix socket can be used.
func defaultUDPAddresses() []string { return []string{"127.0.0.1:323", "[::1]:323"} }

// Config is the `chrony:` section of clockwatch's configuration.
type Config struct {
	// Enabled turns the chrony poller on. A node without chronyd reports
	// clockwatch_chrony_up 0 with the reason in the logs.
	Enabled bool `yaml:"enabled"`
	// Address is "auto", the path of chronyd's unix command socket (an
	// absolute path), or host:port of its UDP command port.
	Address string `yaml:"address"`
	// ReplySocketDir is where clockwatch binds the socket chronyd replies to
	// when it talks over the unix socket. Empty means the first usable of:
	// the directory of chronyd's socket (as chronyc does), $RUNTIME_DIRECTORY,
	// /run/clockwatch. chronyd must be able to write there: not a private
	// /tmp.
	ReplySocketDir string `yaml:"reply_socket_dir"`
	// RuntimeDir is $RUNTIME_DIRECTORY, set by Resolve: not configured.
	RuntimeDir string `yaml:"-"`
	// PollInterval is the shortest time between two polls of chronyd.
	PollInterval time.Duration `yaml:"poll_interval"`
	// MaxPollInterval is the longest: between the two, the poller follows
	// chronyd's own clock updates (polling just after the next one is due),
	// backs off while chronyd does not answer, and polls at once after a
	// clock set. At most PollInterval means every PollInterval.
	MaxPollInterval time.Duration `yaml:"max_poll_interval"`
	// Timeout bounds each request to chronyd.
	Timeout time.Duration `yaml:"timeout"`
	// ConfPath is the chrony.conf audited for runtime clock steps; empty
	// turns the audit off.
	ConfPath string `yaml:"conf_path"`
	// DNSLookups resolves source addresses to names with reverse DNS. Off by
	// default: names then come from chronyd itself (the names in its
	// configuration) or stay addresses.
	DNSLookups bool `yaml:"dns_lookups"`
	// SourceDetails exports every per-source figure: besides the eight that
	// dashboards and alerts use (state, stratum, poll interval,
	// reachability, the last sample's age, offset and error, the estimated
	// offset), the reach register and the sourcestats regression's samples,
	// runs, span, standard deviation, offset error, residual frequency and
	// skew. Off by default: they were half of the per-source series.
	SourceDetails bool `yaml:"source_details"`
	// ServerStats reads chronyd's server side (serverstats, clients): auto
	// (once chronyd has served someone, over its unix socket), on or off.
	ServerStats string `yaml:"server_stats"`
	// Role says what chronyd's readings may do: "authoritative" (the
	// default: they may trigger a stepdown) or "second_opinion" (judged
	// and alerted on, never a stepdown).
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
	return Config{
		Enabled:         true,
		Address:         AddressAuto,
		PollInterval:    time.Second,
		MaxPollInterval: 8 * time.Second,
		Timeout:         500 * time.Millisecond,
		ConfPath:        "/etc/chrony/chrony.conf",
		Role:            timesource.Authoritative.String(),
		ServerStats:     ServerStatsAuto,
	}
}

// Validate reports every problem with the configuration, naming each field
// by its YAML path under `chrony:`.
func (c Config) Validate() error {
	var errs []error
	switch {
	case c.Address == "":
		errs = append(errs, errors.New(`chrony.address: must be "auto", a unix socket path or host:port, got ""`))
	case c.Address == AddressAuto, strings.HasPrefix(c.Address, "/"):
	default:
		if _, port, err := net.SplitHostPort(c.Address); err != nil || port == "" {
			errs = append(errs, fmt.Errorf(`chrony.address: must be "auto", an absolute unix socket path or host:port, got %q`, c.Address))
		}
	}
	if c.PollInterval < 100*time.Millisecond || c.PollInterval > time.Hour {
		errs = append(errs, fmt.Errorf("chrony.poll_interval: must be between 100ms and 1h (each poll is a round of requests to chronyd), got %s", c.PollInterval))
	}
	if c.MaxPollInterval < 0 || c.MaxPollInterval > time.Hour {
		errs = append(errs, fmt.Errorf("chrony.max_poll_interval: must be between 0 (poll every chrony.poll_interval) and 1h, got %s", c.MaxPollInterval))
	}
	if _, err := timesource.ParseRole(c.Role); err != nil {
		errs = append(errs, fmt.Errorf("chrony.role: %w", err))
	}
	if c.Timeout < time.Millisecond {
		errs = append(errs, fmt.Errorf("chrony.timeout: must be at least 1ms, got %s", c.Timeout))
	} else if c.PollInterval > 0 && c.Timeout > c.PollInterval {
		errs = append(errs, fmt.Errorf("chrony.timeout: must not exceed chrony.poll_interval (%s), got %s", c.PollInterval, c.Timeout))
	}
	if c.ReplySocketDir != "" && !strings.HasPrefix(c.ReplySocketDir, "/") {
		errs = append(errs, fmt.Errorf("chrony.reply_socket_dir: must be an absolute path, got %q", c.ReplySocketDir))
	}
	if err := validateServerStats(c.ServerStats); err != nil {
		errs = append(errs, err)
	}
	return errors.Join(errs...)
}

// Resolve returns c with what it takes from the environment (getenv):
// $RUNTIME_DIRECTORY, a place for the reply socket.
func (c Config) Resolve(getenv func(string) string) Config {
	c.RuntimeDir, _, _ = strings.Cut(getenv("RUNTIME_DIRECTORY"), ":")
	return c
}

// Absence marks err, a failed first look for chronyd, as the source's absence
// (timesource.Absent) when the address is "auto" and nothing listens where
// chronyd would (no socket file, or a stale one, and UDP port 323 refused):
// chronyd is not running here, which on a host kept by ntpd or timesyncd is
// no fault. An address given, or any other error (permission denied, a
// timeout), stays a failure. Once chronyd has answered, losing it is a
// failure too: callers use Absence only before the first answer.
func (c Config) Absence(err error) error {
	if err == nil || c.Address != AddressAuto || !nothingListens(err) {
		return err
	}
	return timesource.Absent(fmt.Errorf("chronyd is not running (%w)", err))
}

// nothingListens reports whether err says only that nothing listens: a
// refused connection, and no permission problem beside it.
func nothingListens(err error) bool {
	return errors.Is(err, syscall.ECONNREFUSED) && !errors.Is(err, syscall.EACCES) && !errors.Is(err, syscall.EPERM)
}
