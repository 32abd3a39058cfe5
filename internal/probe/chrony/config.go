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
	// Common is the block every source shares: mode (auto: a node
	// without chronyd reports nothing; on: clockwatch_chrony_up 0 with the
	// reason in the logs), the older enabled, role (authoritative by
	// default), poll_interval (the shortest time between two polls) and
	// timeout (of each request).
	timesource.Common `yaml:",inline"`
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
	// MaxPollInterval is the longest while chronyd's exit is not watched
	// (PIDFile): between the two, the poller follows chronyd's own clock
	// updates (polling just after the next one is due), backs off while
	// chronyd does not answer, and polls at once after a clock set. At most
	// PollInterval means every PollInterval.
	MaxPollInterval time.Duration `yaml:"max_poll_interval"`
	// PIDFile is chronyd's pid file: while chronyd answers, the poller
	// waits on its process (a pidfd) and notices its exit at once, so it
	// may follow chronyd's updates up to WatchedMaxPollInterval apart.
	// Empty turns the watch off. Read only when chronyd is on this host
	// (the address "auto", a unix socket, or a loopback UDP port).
	PIDFile string `yaml:"pid_file"`
	// WatchedMaxPollInterval is the longest between two polls while
	// chronyd's exit is watched (PIDFile): its exit is then noticed at
	// once, not at the next poll, and only a chronyd that hangs without
	// exiting waits for it. Not below MaxPollInterval.
	WatchedMaxPollInterval time.Duration `yaml:"watched_max_poll_interval"`
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
}

// DefaultConfig returns the configuration used when the file says nothing.
func DefaultConfig() Config {
	return Config{
		Common:          timesource.Auto(timesource.Authoritative, time.Second, 500*time.Millisecond),
		Address:         AddressAuto,
		MaxPollInterval: 8 * time.Second,
		PIDFile:         DefaultPIDFile,
		// chronyd updates every 64–1024 s once settled.
		WatchedMaxPollInterval: 64 * time.Second,
		ConfPath:               "/etc/chrony/chrony.conf",
		ServerStats:            ServerStatsAuto,
	}
}

// limits bound the common block: each poll is a round of requests.
func limits() timesource.Limits {
	return timesource.Limits{MinPoll: 100 * time.Millisecond, MaxPoll: time.Hour, Why: "each poll is a round of requests to chronyd"}
}

// Validate reports every problem with the configuration, naming each field
// by its YAML path under `chrony:`.
func (c Config) Validate() error {
	errs := []error{c.Common.Validate("chrony", limits())}
	switch {
	case c.Address == "":
		errs = append(errs, errors.New(`chrony.address: must be "auto", a unix socket path or host:port, got ""`))
	case c.Address == AddressAuto, strings.HasPrefix(c.Address, "/"):
	default:
		if _, port, err := net.SplitHostPort(c.Address); err != nil || port == "" {
			errs = append(errs, fmt.Errorf(`chrony.address: must be "auto", an absolute unix socket path or host:port, got %q`, c.Address))
		}
	}
	if c.MaxPollInterval < 0 || c.MaxPollInterval > time.Hour {
		errs = append(errs, fmt.Errorf("chrony.max_poll_interval: must be between 0 (poll every chrony.poll_interval) and 1h, got %s", c.MaxPollInterval))
	}
	if c.WatchedMaxPollInterval < 0 || c.WatchedMaxPollInterval > time.Hour {
		errs = append(errs, fmt.Errorf("chrony.watched_max_poll_interval: must be between 0 (chrony.max_poll_interval) and 1h, got %s", c.WatchedMaxPollInterval))
	}
	if c.PIDFile != "" && !strings.HasPrefix(c.PIDFile, "/") {
		errs = append(errs, fmt.Errorf("chrony.pid_file: must be an absolute path or empty (no watch), got %q", c.PIDFile))
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
// (timesource.Absent) when the address is "auto", the mode not on, and nothing listens where
// chronyd would (no socket file, or a stale one, and UDP port 323 refused):
// chronyd is not running here, which on a host kept by ntpd or timesyncd is
// no fault. An address given, or any other error (permission denied, a
// timeout), stays a failure. Once chronyd has answered, losing it is a
// failure too: callers use Absence only before the first answer.
func (c Config) Absence(err error) error {
	if err == nil || c.Address != AddressAuto || c.Pinned() || !nothingListens(err) {
		return err
	}
	return timesource.Absent(fmt.Errorf("chronyd is not running (%w)", err))
}

// nothingListens reports whether err says only that nothing listens: a
// refused connection, and no permission problem beside it.
func nothingListens(err error) bool {
	return errors.Is(err, syscall.ECONNREFUSED) && !errors.Is(err, syscall.EACCES) && !errors.Is(err, syscall.EPERM)
}

// local reports whether chronyd is on this host: found by itself, at a unix
// socket, or at a loopback UDP port. Only then does its pid file say which
// process answers.
func (c Config) local() bool {
	if c.Address == AddressAuto || strings.HasPrefix(c.Address, "/") {
		return true
	}
	host, _, err := net.SplitHostPort(c.Address)
	if err != nil {
		return false
	}
	ip := net.ParseIP(host)
	return host == "localhost" || (ip != nil && ip.IsLoopback())
}
