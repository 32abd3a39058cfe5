//go:build linux

package main

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"syscall"

	"golang.org/x/sys/unix"

	"github.com/clockwatch/clockwatch/internal/journal"
	"github.com/clockwatch/clockwatch/internal/transport/socket"
)

// The directories of a user other than root. clockwatch keeps its state in
// /var/lib/clockwatch and its sockets in /run/clockwatch (systemd's
// StateDirectory= and RuntimeDirectory=, or RUNTIME_DIRECTORY and
// STATE_DIRECTORY, say otherwise). A user other than root who runs it from a
// checkout (`go run ./cmd/clockwatch`) may write neither: the daemon then
// uses the user's own, and says so in its log, and the same user's
// subcommands look there when the system's are not there for them. So the
// development loop needs no environment: the daemon in one terminal,
// `clockwatch status`, `watch`, `drill` and `events` in another.
//
//   - runtime: $XDG_RUNTIME_DIR/clockwatch, else /tmp/clockwatch-UID (mode
//     0700, and refused if another user made it first);
//   - state: $XDG_STATE_HOME/clockwatch, else $HOME/.local/state/clockwatch.
//
// Deployments keep theirs: systemd sets the variables, the Kubernetes and
// container images make /run/clockwatch and /var/lib/clockwatch the daemon
// user's, and a configuration that names stepdown.socket or journal.dir is
// followed as it is.

// userRuntimeDir is the runtime directory of user uid (not root).
func userRuntimeDir(getenv func(string) string, uid int) string {
	if x := getenv("XDG_RUNTIME_DIR"); filepath.IsAbs(x) {
		return filepath.Join(x, "clockwatch")
	}
	return filepath.Join(os.TempDir(), "clockwatch-"+strconv.Itoa(uid))
}

// userStateDir is the state directory of user uid (not root), "" when the
// environment names no home.
func userStateDir(getenv func(string) string) string {
	if x := getenv("XDG_STATE_HOME"); filepath.IsAbs(x) {
		return filepath.Join(x, "clockwatch")
	}
	if h := getenv("HOME"); filepath.IsAbs(h) && h != "/" {
		return filepath.Join(h, ".local", "state", "clockwatch")
	}
	return ""
}

// dirEnv is an environment with RUNTIME_DIRECTORY and STATE_DIRECTORY set
// over getenv's.
func dirEnv(getenv func(string) string, runtime, state string) func(string) string {
	return func(k string) string {
		switch {
		case k == "RUNTIME_DIRECTORY" && runtime != "":
			return runtime
		case k == "STATE_DIRECTORY" && state != "":
			return state
		}
		return getenv(k)
	}
}

// userDir is a directory of the user's own the daemon uses, and why.
type userDir struct{ dir, instead string }

// daemonDirs returns the daemon's environment: for a user other than root
// whose environment and configuration leave a directory at its default,
// which that user may not write, the user's own directory instead, created
// (used says which, for the log).
func daemonDirs(getenv func(string) string, uid int, sockPath, journalDir string) (env func(string) string, used []userDir, err error) {
	if uid == 0 {
		return getenv, nil, nil
	}
	var runtime, state string
	if getenv("RUNTIME_DIRECTORY") == "" && sockPath == socket.DefaultSocket && !mayWrite(filepath.Dir(socket.DefaultSocket)) {
		runtime = userRuntimeDir(getenv, uid)
		if err := ownDir(runtime, uid); err != nil {
			return nil, nil, fmt.Errorf("%s is not writable by uid %d, and its own runtime directory: %w (set RUNTIME_DIRECTORY or stepdown.socket)", filepath.Dir(socket.DefaultSocket), uid, err)
		}
		used = append(used, userDir{runtime, filepath.Dir(socket.DefaultSocket)})
	}
	if getenv("STATE_DIRECTORY") == "" && journalDir == "" && !mayWrite(journal.DefaultDir) {
		if state = userStateDir(getenv); state == "" {
			return nil, nil, fmt.Errorf("%s is not writable by uid %d, and there is no HOME for a state directory of its own (set STATE_DIRECTORY or journal.dir)", journal.DefaultDir, uid)
		}
		if err := ownDir(state, uid); err != nil {
			return nil, nil, fmt.Errorf("%s is not writable by uid %d, and its own state directory: %w (set STATE_DIRECTORY or journal.dir)", journal.DefaultDir, uid, err)
		}
		used = append(used, userDir{state, journal.DefaultDir})
	}
	return dirEnv(getenv, runtime, state), used, nil
}

// clientDirs returns a subcommand's environment: for a user other than root
// whose environment and configuration leave a directory at its default, the
// user's own directory when the system's is not there for them (missing, or
// closed to them) and the user's is (their daemon made it).
func clientDirs(getenv func(string) string, uid int, sockPath, journalDir string) func(string) string {
	if uid == 0 {
		return getenv
	}
	var runtime, state string
	if getenv("RUNTIME_DIRECTORY") == "" && sockPath == socket.DefaultSocket {
		if _, err := os.Stat(socket.DefaultSocket); err != nil {
			own := userRuntimeDir(getenv, uid)
			if _, err := os.Stat(filepath.Join(own, filepath.Base(socket.DefaultSocket))); err == nil {
				runtime = own
			}
		}
	}
	if getenv("STATE_DIRECTORY") == "" && journalDir == "" && unix.Access(journal.DefaultDir, unix.R_OK|unix.X_OK) != nil {
		if own := userStateDir(getenv); own != "" {
			if _, err := os.Stat(own); err == nil {
				state = own
			}
		}
	}
	return dirEnv(getenv, runtime, state)
}

// mayWrite says whether this process may create files in dir, or create dir
// itself when it is missing.
func mayWrite(dir string) bool {
	err := unix.Access(dir, unix.W_OK|unix.X_OK)
	if errors.Is(err, unix.ENOENT) {
		return mayWrite(filepath.Dir(dir))
	}
	return err == nil
}

// ownDir makes dir (mode 0700) and checks that it is a directory of uid's
// that no one else may write: under /tmp another user could have made it
// first.
func ownDir(dir string, uid int) error {
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return err
	}
	st, err := os.Lstat(dir)
	if err != nil {
		return err
	}
	sys, ok := st.Sys().(*syscall.Stat_t)
	switch {
	case !st.IsDir():
		return fmt.Errorf("%s is not a directory", dir)
	case !ok || int(sys.Uid) != uid:
		return fmt.Errorf("%s belongs to another user", dir)
	case st.Mode().Perm()&0o022 != 0:
		return fmt.Errorf("%s may be written by others (mode %04o)", dir, st.Mode().Perm())
	}
	return nil
}
