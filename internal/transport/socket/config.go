package socket

import (
	"errors"
	"fmt"
	"path/filepath"
	"strconv"
	"strings"
	"time"

	"github.com/clockwatch/clockwatch/stepdown"
)

// DefaultSocket is where the stepdown socket lives unless configured.
const DefaultSocket = "/run/clockwatch/stepdown.sock"

// Bounds of the numeric settings, checked by Validate (and so by
// --config.check).
const (
	// MinHeartbeat: a shorter heartbeat is a busy loop of writes to every
	// client.
	MinHeartbeat = 10 * time.Millisecond
	// MaxClientsLimit is the most subscribers (file descriptors) allowed.
	MaxClientsLimit = 65536
	// MaxQueueSize bounds one client's queue, and MaxQueuedTotal the
	// queues of all clients together: each entry costs 24 bytes allocated
	// when the client connects, so 2e9 would kill the daemon at the first
	// subscriber.
	MaxQueueSize   = 4096
	MaxQueuedTotal = 1 << 22
	// MinDrillHold is the shortest drill: a client must see the stepdown
	// before the resume.
	MinDrillHold = time.Millisecond
)

// Config is the socket's part of the stepdown section of clockwatch's
// configuration file, under the top-level key "stepdown"; the policy's part
// (hold_down, triggers) is policy.Config, read beside it under the same key.
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
	// ReservedSocket is the path of the reserved socket, a second
	// listening socket that only root, clockwatch's own uid and
	// ReservedGroup may connect to (mode 0600, or 0660 with a group), so
	// that no other uid can fill its accept queue: its connections are
	// never paced behind another uid's flood. Empty: beside Socket
	// (stepdown.ReservedPath, where clients look for it); "none": off.
	ReservedSocket string `yaml:"reserved_socket"`
	// ReservedGroup may connect to the reserved socket besides root and
	// clockwatch's uid (a name or a numeric gid). Empty: nobody else. Not
	// the applications' group (Group): one of them flooding would fill
	// the reserved socket's queue too.
	ReservedGroup string `yaml:"reserved_group"`
	// Heartbeat is the interval between heartbeats.
	Heartbeat time.Duration `yaml:"heartbeat"`
	// MaxClients limits the number of simultaneous subscribers. A 64th of
	// it (64 of the default 4096) is kept for root, clockwatch's own uid
	// and DrillUIDs, so that a drill or an operator gets in when
	// applications have taken the rest.
	MaxClients int `yaml:"max_clients"`
	// MaxClientsPerUID bounds the connections of any one uid (root,
	// clockwatch's uid and DrillUIDs excepted), so that one misbehaving
	// application cannot lock out the others.
	MaxClientsPerUID int `yaml:"max_clients_per_uid"`
	// QueueSize is how many messages may wait for one subscriber; one that
	// falls further behind is disconnected.
	QueueSize int `yaml:"queue_size"`
	// WriteTimeout is accepted and checked but no longer used: a
	// subscriber's writes wait while its queue has room, and one whose
	// queue is full (QueueSize) is disconnected.
	WriteTimeout time.Duration `yaml:"write_timeout"`
	// AllowUIDs and AllowGIDs, when either is non-empty, restrict who may
	// connect: a peer whose uid or primary gid is listed, or root.
	AllowUIDs []uint32 `yaml:"allow_uids"`
	AllowGIDs []uint32 `yaml:"allow_gids"`
	// DrillUIDs may ask for drills, besides root and clockwatch's own uid.
	DrillUIDs []uint32 `yaml:"drill_uids"`
	// MaxDrillHold caps how long a drill may hold the stepdown state.
	MaxDrillHold time.Duration `yaml:"max_drill_hold"`
}

// DefaultConfig returns the defaults: enabled on DefaultSocket with mode 0660,
// a 1 s heartbeat, 4096 clients (1024 per uid) with 64 queued messages
// each.
func DefaultConfig() Config {
	return Config{
		Enabled:          true,
		Socket:           DefaultSocket,
		Mode:             "0660",
		Heartbeat:        time.Second,
		MaxClients:       4096,
		MaxClientsPerUID: 1024,
		QueueSize:        64,
		WriteTimeout:     5 * time.Second,
		MaxDrillHold:     5 * time.Minute,
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

// maxSocketPath is the longest path a unix socket may have.
const maxSocketPath = 107

// ReservedOff is the ReservedSocket that turns the reserved socket off.
const ReservedOff = "none"

// reservedPath is where the reserved socket of the stepdown socket at
// public lives, or "" when it is off or its default would be longer than a
// unix socket's path may be.
func (c Config) reservedPath(public string) string {
	switch c.ReservedSocket {
	case ReservedOff:
		return ""
	case "":
		if r := stepdown.ReservedPath(public); len(r) <= maxSocketPath {
			return r
		}
		return ""
	}
	return c.ReservedSocket
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
	if c.Group != "" {
		if _, err := lookupGroup("stepdown.group", c.Group); err != nil {
			errs = append(errs, fmt.Errorf("%w (name an existing group or a numeric gid)", err))
		}
	}
	switch r := c.reservedPath(c.Socket); {
	case c.ReservedSocket == ReservedOff, c.ReservedSocket == "" && len(errs) > 0:
		// Off, or beside a socket already found wrong.
	case c.ReservedSocket != "" && !filepath.IsAbs(r):
		add("stepdown.reserved_socket: must be an absolute path or %q, got %q", ReservedOff, r)
	case c.ReservedSocket == "":
		// The default beside the socket: when longer than a unix
		// socket's path may be, there is none (the server says so).
	case len(r) > 107:
		add("stepdown.reserved_socket: must be at most 107 bytes long (a unix socket path), got %d", len(r))
	case r == c.Socket:
		add("stepdown.reserved_socket: must not be stepdown.socket, %s", c.Socket)
	}
	if c.ReservedGroup != "" {
		if _, err := lookupGroup("stepdown.reserved_group", c.ReservedGroup); err != nil {
			errs = append(errs, fmt.Errorf("%w (name an existing group or a numeric gid)", err))
		}
	}
	durBetween := func(key string, d, lo, hi time.Duration, why string) {
		if d < lo || d > hi {
			add("stepdown.%s: must be between %s and %s%s, got %s", key, lo, hi, why, d)
		}
	}
	intBetween := func(key string, n, lo, hi int, why string) {
		if n < lo || n > hi {
			add("stepdown.%s: must be between %d and %d%s, got %d", key, lo, hi, why, n)
		}
	}
	durBetween("heartbeat", c.Heartbeat, MinHeartbeat, time.Hour, " (each beat is a write to every client)")
	intBetween("max_clients", c.MaxClients, 1, MaxClientsLimit, " (each is a file descriptor)")
	intBetween("max_clients_per_uid", c.MaxClientsPerUID, 1, MaxClientsLimit, "")
	intBetween("queue_size", c.QueueSize, 1, MaxQueueSize, " (messages held for each subscriber that falls behind)")
	if c.MaxClients > 0 && c.QueueSize > 0 && c.MaxClients <= MaxClientsLimit && c.QueueSize <= MaxQueueSize &&
		c.MaxClients*c.QueueSize > MaxQueuedTotal {
		add("stepdown.queue_size: queue_size × max_clients must be at most %d (about %d MiB of queues), got %d × %d",
			MaxQueuedTotal, MaxQueuedTotal*24>>20, c.QueueSize, c.MaxClients)
	}
	durBetween("write_timeout", c.WriteTimeout, time.Millisecond, time.Minute, "")
	durBetween("max_drill_hold", c.MaxDrillHold, MinDrillHold, 24*time.Hour, "")
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
