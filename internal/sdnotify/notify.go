package sdnotify

import (
	"errors"
	"fmt"
	"net"
	"strconv"
	"strings"
	"time"
)

// Environment variables systemd sets for a Type=notify service.
const (
	EnvNotifySocket = "NOTIFY_SOCKET"
	EnvWatchdogUsec = "WATCHDOG_USEC"
	EnvWatchdogPID  = "WATCHDOG_PID"
)

// States clockwatch sends. Each is one line of a notification datagram.
const (
	StateReady     = "READY=1"
	StateStopping  = "STOPPING=1"
	StateReloading = "RELOADING=1"
	StateWatchdog  = "WATCHDOG=1"
)

// maxSocketPath is the size of sun_path in struct sockaddr_un, including the
// terminating NUL byte of a path or the leading NUL of an abstract name.
const maxSocketPath = 108

// Notifier sends notifications to the service manager. The zero value, and a
// Notifier made from an environment without $NOTIFY_SOCKET, is disabled:
// every method returns nil without doing anything. A Notifier is safe for
// concurrent use: each notification is one datagram on its own connection.
type Notifier struct {
	socket    string
	monotonic func() (time.Duration, error)
}

// FromEnv returns the Notifier for the socket named by $NOTIFY_SOCKET, looked
// up with getenv (os.Getenv in the daemon). It returns a disabled Notifier when
// the variable is unset or empty, and an error when it names a socket this
// package cannot reach.
func FromEnv(getenv func(string) string) (*Notifier, error) {
	return New(getenv(EnvNotifySocket))
}

// New returns the Notifier for the given socket: a filesystem path, an
// abstract socket name with a leading '@', or "" for a disabled Notifier.
func New(socket string) (*Notifier, error) {
	if socket != "" {
		if err := checkSocket(socket); err != nil {
			return nil, fmt.Errorf("%s=%q: %w", EnvNotifySocket, socket, err)
		}
	}
	return &Notifier{socket: socket, monotonic: monotonicNow}, nil
}

func checkSocket(socket string) error {
	if socket[0] != '/' && socket[0] != '@' {
		// systemd 253 and later may also hand out vsock: addresses, for
		// services in virtual machines; clockwatch runs on the host.
		return errors.New("not an absolute path or an abstract '@' socket name")
	}
	if len(socket) >= maxSocketPath {
		return fmt.Errorf("longer than the %d bytes a unix socket address holds", maxSocketPath-1)
	}
	return nil
}

// Enabled reports whether notifications go anywhere.
func (n *Notifier) Enabled() bool { return n != nil && n.socket != "" }

// Socket returns the socket notifications are sent to, "" when disabled.
func (n *Notifier) Socket() string {
	if n == nil {
		return ""
	}
	return n.socket
}

// Notify sends the given KEY=VALUE states in one datagram. Values must not
// contain newlines: the protocol has one assignment per line.
func (n *Notifier) Notify(states ...string) error {
	if !n.Enabled() || len(states) == 0 {
		return nil
	}
	for _, s := range states {
		if k, _, ok := strings.Cut(s, "="); !ok || k == "" {
			return fmt.Errorf("notifying systemd: %q is not KEY=VALUE", s)
		}
		if strings.ContainsAny(s, "\n\x00") {
			return fmt.Errorf("notifying systemd: %q contains a newline or NUL", s)
		}
	}
	conn, err := net.DialUnix("unixgram", nil, &net.UnixAddr{Name: n.socket, Net: "unixgram"})
	if err != nil {
		return fmt.Errorf("notifying systemd: connecting to %s: %w", n.socket, err)
	}
	defer conn.Close()
	if _, err := conn.Write([]byte(strings.Join(states, "\n") + "\n")); err != nil {
		return fmt.Errorf("notifying systemd: sending %s: %w", strings.Join(states, " "), err)
	}
	return nil
}

// Ready tells systemd that start-up is finished: for a Type=notify unit, the
// service counts as started, and units ordered after it start now. With
// status it also sets the status line (empty status: none).
func (n *Notifier) Ready(status string) error {
	if status == "" {
		return n.Notify(StateReady)
	}
	return n.Notify(StateReady, statusLine(status))
}

// Status sets the free-form status line `systemctl status` shows. Newlines
// in status become spaces.
func (n *Notifier) Status(status string) error { return n.Notify(statusLine(status)) }

// Stopping tells systemd that the daemon has begun shutting down.
func (n *Notifier) Stopping() error { return n.Notify(StateStopping) }

// Reloading tells systemd that the daemon is reloading its configuration;
// send Ready when done. It includes the MONOTONIC_USEC timestamp that
// Type=notify-reload (systemd 253 and later) requires and older versions
// ignore.
func (n *Notifier) Reloading() error {
	if !n.Enabled() {
		return nil
	}
	mono, err := n.monotonic()
	if err != nil {
		return fmt.Errorf("notifying systemd of a reload: %w", err)
	}
	return n.Notify(StateReloading, "MONOTONIC_USEC="+strconv.FormatInt(mono.Microseconds(), 10))
}

// Watchdog is the keep-alive ping: systemd restarts a service with WatchdogSec=
// set that goes longer than that without one.
func (n *Notifier) Watchdog() error { return n.Notify(StateWatchdog) }

func statusLine(status string) string {
	return "STATUS=" + strings.NewReplacer("\n", " ", "\x00", " ").Replace(strings.TrimSpace(status))
}

// WatchdogInterval returns the watchdog interval systemd expects pings within,
// from $WATCHDOG_USEC and $WATCHDOG_PID looked up with getenv; pid is this
// process's ID (os.Getpid()). It returns 0 when the watchdog is off: the
// variable is unset, or $WATCHDOG_PID names another process (the variables were
// inherited, not meant for us).
func WatchdogInterval(getenv func(string) string, pid int) (time.Duration, error) {
	usec := getenv(EnvWatchdogUsec)
	if usec == "" {
		return 0, nil
	}
	if p := getenv(EnvWatchdogPID); p != "" {
		wpid, err := strconv.Atoi(p)
		if err != nil {
			return 0, fmt.Errorf("%s=%q: not a process ID: %w", EnvWatchdogPID, p, err)
		}
		if wpid != pid {
			return 0, nil
		}
	}
	u, err := strconv.ParseInt(usec, 10, 64)
	if err != nil {
		return 0, fmt.Errorf("%s=%q: not a number of microseconds: %w", EnvWatchdogUsec, usec, err)
	}
	if u <= 0 {
		return 0, fmt.Errorf("%s=%q: must be positive", EnvWatchdogUsec, usec)
	}
	if u > int64(time.Duration(1<<63-1)/time.Microsecond) {
		return 0, fmt.Errorf("%s=%q: too large", EnvWatchdogUsec, usec)
	}
	return time.Duration(u) * time.Microsecond, nil
}
