//go:build linux

package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"os/user"
	"path/filepath"
	"strconv"
	"syscall"
	"time"

	"github.com/clockwatch/clockwatch/internal/health"
	"github.com/clockwatch/clockwatch/internal/transport/socket"
	"github.com/clockwatch/clockwatch/stepdown"
)

// helloTimeout bounds how long status waits for the daemon's hello: the
// daemon greets a client at once, so a longer wait means it is stuck.
const helloTimeout = 2 * time.Second

// askDaemon connects to the stepdown socket and returns the daemon's hello:
// what every lock holder is being told now.
func askDaemon(ctx context.Context, path string) (stepdown.Message, error) {
	ctx, cancel := context.WithTimeout(ctx, helloTimeout)
	defer cancel()
	c, err := stepdown.Dial(ctx, path)
	if err != nil {
		return stepdown.Message{}, err
	}
	defer c.Close()
	if err := c.SetReadDeadline(time.Now().Add(helloTimeout)); err != nil {
		return stepdown.Message{}, err
	}
	m, err := c.Read()
	if err != nil {
		return stepdown.Message{}, fmt.Errorf("reading the daemon's hello on %s: %w", path, err)
	}
	if m.Type != stepdown.TypeHello {
		return stepdown.Message{}, fmt.Errorf("the daemon on %s sent %q first, not a hello", path, m.Type)
	}
	return m, nil
}

// writeDaemonState prints, before status's own verdict, what the running
// daemon tells lock holders, and says when the two differ and why: status
// judges by the health thresholds now, the socket by the stepdown triggers,
// their grace periods and the hold-down.
func writeDaemonState(w io.Writer, sd socket.Config, hello stepdown.Message, askErr error, v health.Verdict, now time.Time) {
	switch {
	case !sd.Enabled:
		fmt.Fprintf(w, "Stepdown state : off (stepdown.enabled: false): no socket, lock holders are told nothing\n")
		return
	case askErr != nil:
		fmt.Fprintf(w, "Stepdown state : unknown: %s\n", explainSocket(sd.Socket, askErr))
		return
	}
	line := string(hello.State)
	if hello.Reason != "" {
		line += ", reason " + string(hello.Reason)
		if hello.Source != "" {
			line += " (" + hello.Source + ")"
		}
	}
	if hello.Drill {
		line += ", a drill"
	}
	if !hello.Since.IsZero() {
		line += fmt.Sprintf(", since %s (%s ago)", hello.Since.UTC().Format(time.RFC3339), now.Sub(hello.Since).Round(time.Second))
	}
	others := max(hello.Subscribers-1, 0) // this status is one of them
	fmt.Fprintf(w, "Stepdown state : %s\n", line)
	if hello.Detail != "" {
		fmt.Fprintf(w, "  %-13s%s\n", "", hello.Detail)
	}
	fmt.Fprintf(w, "Clock epoch    : %d\nSubscribers    : %d connected (besides this status)\n", hello.Epoch, others)
	if why := differs(hello, v); why != "" {
		fmt.Fprintf(w, "Verdicts differ: %s\n", why)
	}
}

// differs says why status's verdict and the daemon's state disagree, or ""
// when they agree (OK with ok; WARNING or CRITICAL with stepdown).
func differs(hello stepdown.Message, v health.Verdict) string {
	switch st := hello.State; {
	case st == stepdown.StateUnknown:
		return fmt.Sprintf("the daemon says unknown (%s): it is starting and waits for every source's first reading; status reads them itself", hello.Reason)
	case st == stepdown.StateOK && v.Level != health.OK:
		return fmt.Sprintf("status says %s, lock holders are told ok: status judges by the health thresholds (health.*) and every warning it finds; "+
			"the socket steps down only for the enabled stepdown.triggers, each past its grace, and none holds", v.Level)
	case st == stepdown.StateStepdown && v.Level == health.OK:
		return fmt.Sprintf("status says OK, lock holders are told stepdown (%s): the socket resumes only once the condition has cleared "+
			"and the hold-down (%s) has passed since, with a fresh reading of every source; status sees nothing wrong now",
			hello.Reason, time.Duration(hello.HoldDownSeconds*float64(time.Second)))
	}
	return ""
}

// explainSocket turns a failure to reach the stepdown socket into what the
// user should do: start the daemon, or join the socket's group.
func explainSocket(path string, err error) string {
	switch {
	case errors.Is(err, fs.ErrPermission):
		return fmt.Sprintf("permission denied on %s: %s", path, joinHint(path))
	case errors.Is(err, fs.ErrNotExist):
		return fmt.Sprintf("is clockwatch running? No stepdown socket at %s (start it: sudo systemctl start clockwatch; if it runs with another socket, set stepdown.socket or RUNTIME_DIRECTORY as it has them, or give --socket)", path)
	case errors.Is(err, syscall.ECONNREFUSED):
		return fmt.Sprintf("is clockwatch running? Nobody answers on %s (a socket left by a daemon that stopped; start it: sudo systemctl start clockwatch)", path)
	}
	return fmt.Sprintf("is clockwatch running? %v", err)
}

// joinHint says which group grants access to path (the file, or the first
// directory above it that exists), and how to join it.
func joinHint(path string) string {
	for p := path; ; p = filepath.Dir(p) {
		st, err := os.Stat(p)
		if err == nil {
			if sys, ok := st.Sys().(*syscall.Stat_t); ok {
				group := strconv.FormatUint(uint64(sys.Gid), 10)
				if g, err := user.LookupGroupId(group); err == nil {
					group = g.Name
				}
				what := "it belongs"
				if p != path {
					what = p + " belongs"
				}
				if sys.Gid == 0 {
					// Joining root's group is no fix: the daemon ran as
					// root without stepdown.group (or a root run made
					// the directory).
					return fmt.Sprintf("%s to root's group (mode %04o): the daemon runs as root, or a run as root made it; run this as root (sudo), or give the daemon stepdown.group, a group of yours (the socket's group), or run it as your own user", what, st.Mode().Perm())
				}
				return fmt.Sprintf("%s to group %s (mode %04o): run as root, or join the group (sudo usermod -aG %s $USER, then log in again)", what, group, st.Mode().Perm(), group)
			}
			break
		}
		if p == filepath.Dir(p) {
			break
		}
	}
	return "run as root, or as a member of the group that owns it (stepdown.group; clockwatch by default)"
}
