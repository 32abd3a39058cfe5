package server

import (
	"errors"
	"fmt"
	"path/filepath"
	"strconv"
	"strings"
	"time"

	"github.com/clockwatch/clockwatch/stepdown/policy"
)

// DefaultSocket is where the stepdown socket lives unless configured.
const DefaultSocket = "/run/clockwatch/stepdown.sock"

// Config is the stepdown section of clockwatch's configuration file, under the
// top-level key "stepdown".
type Config struct {
	// Enabled turns the stepdown socket on.
	Enabled bool `yaml:"enabled"`
	// Socket is the path of the unix socket. Its directory is created when
	// missing. Ignored under systemd socket activation.
	Socket string `yaml:"socket"`
	// Mode is the socket file's permission bits, in octal ("0660").
	Mode string `yaml:"mode"`
	// Group owns the socket file (a name or a numeric gid); empty keeps
	// clockwatch's own group. Applications in this group may subscribe.
	Group string `yaml:"group"`
	// Heartbeat is the interval between heartbeats.
	Heartbeat time.Duration `yaml:"heartbeat"`
	// HoldDown is how long the clock must stay healthy after the last
	// trigger before resume is sent.
	HoldDown time.Duration `yaml:"hold_down"`
	// MaxClients limits the number of simultaneous subscribers.
	MaxClients int `yaml:"max_clients"`
	// QueueSize is how many messages may wait for one subscriber; one that
	// falls further behind is disconnected.
	QueueSize int `yaml:"queue_size"`
	// WriteTimeout bounds a single write to a subscriber.
	WriteTimeout time.Duration `yaml:"write_timeout"`
	// AllowUIDs and AllowGIDs, when either is non-empty, restrict who may
	// connect: a peer whose uid or primary gid is listed, or root.
	AllowUIDs []uint32 `yaml:"allow_uids"`
	AllowGIDs []uint32 `yaml:"allow_gids"`
	// DrillUIDs may ask for drills, besides root and clockwatch's own uid.
	DrillUIDs []uint32 `yaml:"drill_uids"`
	// MaxDrillHold caps how long a drill may hold the stepdown state.
	MaxDrillHold time.Duration `yaml:"max_drill_hold"`
	// Triggers configures what causes a stepdown.
	Triggers policy.Triggers `yaml:"triggers"`
}

// DefaultConfig returns the defaults: enabled on DefaultSocket with mode 0660,
// a 1 s heartbeat, a 30 s hold-down, 4096 clients with 64 queued messages
// each, and policy.DefaultTriggers.
func DefaultConfig() Config {
	return Config{
		Enabled:      true,
		Socket:       DefaultSocket,
		Mode:         "0660",
		Heartbeat:    time.Second,
		HoldDown:     30 * time.Second,
		MaxClients:   4096,
		QueueSize:    64,
		WriteTimeout: 5 * time.Second,
		MaxDrillHold: 5 * time.Minute,
		Triggers:     policy.DefaultTriggers(),
	}
}

// Resolve returns c with the socket where the daemon opens it: the
// configured path, except that the default follows systemd's
// RuntimeDirectory= (the first path of RUNTIME_DIRECTORY) when set. Every
// subcommand that dials the socket resolves it the same way.
func (c Config) Resolve(getenv func(string) string) Config {
	if c.Socket != DefaultSocket {
		return c
	}
	if dir, _, _ := strings.Cut(getenv("RUNTIME_DIRECTORY"), ":"); dir != "" {
		c.Socket = filepath.Join(dir, filepath.Base(DefaultSocket))
	}
	return c
}

// Validate checks the configuration; each error names its field by YAML path.
func (c Config) Validate() error {
	var errs []error
	add := func(format string, args ...any) { errs = append(errs, fmt.Errorf(format, args...)) }
	if c.Socket == "" || !filepath.IsAbs(c.Socket) {
		add("stepdown.socket: must be an absolute path, got %q", c.Socket)
	} else if len(c.Socket) > 107 {
		add("stepdown.socket: must be at most 107 bytes long (a unix socket path), got %d", len(c.Socket))
	}
	if _, err := c.FileMode(); err != nil {
		add("stepdown.mode: %w", err)
	}
	if c.Heartbeat <= 0 {
		add("stepdown.heartbeat: must be positive, got %s", c.Heartbeat)
	}
	if c.HoldDown < 0 {
		add("stepdown.hold_down: must not be negative, got %s", c.HoldDown)
	}
	if c.MaxClients <= 0 {
		add("stepdown.max_clients: must be positive, got %d", c.MaxClients)
	}
	if c.QueueSize <= 0 {
		add("stepdown.queue_size: must be positive, got %d", c.QueueSize)
	}
	if c.WriteTimeout <= 0 {
		add("stepdown.write_timeout: must be positive, got %s", c.WriteTimeout)
	}
	if c.MaxDrillHold <= 0 {
		add("stepdown.max_drill_hold: must be positive, got %s", c.MaxDrillHold)
	}
	if err := c.Triggers.Validate("stepdown.triggers"); err != nil {
		errs = append(errs, err)
	}
	return errors.Join(errs...)
}

// FileMode parses Mode.
func (c Config) FileMode() (uint32, error) {
	m, err := strconv.ParseUint(c.Mode, 8, 32)
	if err != nil || m > 0o777 {
		return 0, fmt.Errorf("must be octal permission bits like \"0660\", got %q", c.Mode)
	}
	return uint32(m), nil
}

// PolicyConfig is the policy's part of the configuration.
func (c Config) PolicyConfig() policy.Config {
	return policy.Config{HoldDown: c.HoldDown, Triggers: c.Triggers}
}
