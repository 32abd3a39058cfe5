package socket

import (
	"errors"
	"fmt"
	"net"
	"os"
	"os/user"
	"path/filepath"
	"strconv"
	"syscall"
	"time"

	"github.com/clockwatch/clockwatch/internal/host"
	"github.com/clockwatch/clockwatch/internal/safefile"
)

// ActivationName is the FileDescriptorName= of the stepdown socket unit.
// clockwatch only takes a socket from systemd under this name, so that it
// never mistakes another activated socket (the HTTP one) for its own.
const ActivationName = "stepdown"

// Activated returns the listener systemd passed to this process under the
// name ActivationName (socket activation: LISTEN_PID, LISTEN_FDS and
// LISTEN_FDNAMES), or ok false when there is none. getenv and pid are
// parameters so tests need no environment. It leaves the environment and the
// other descriptors alone.
func Activated(getenv func(string) string, pid int) (l *net.UnixListener, ok bool, err error) {
	fd := -1
	for _, s := range host.Activated(getenv, pid) {
		if s.Name == ActivationName {
			fd = s.FD
			break
		}
	}
	if fd < 0 {
		return nil, false, nil
	}
	f := os.NewFile(uintptr(fd), "systemd-"+ActivationName)
	defer f.Close()
	fl, err := net.FileListener(f)
	if err != nil {
		return nil, false, fmt.Errorf("using socket fd %d passed by systemd: %w", fd, err)
	}
	ul, isUnix := fl.(*net.UnixListener)
	if !isUnix {
		fl.Close()
		return nil, false, fmt.Errorf("socket fd %d passed by systemd is %s, want a unix stream socket", fd, fl.Addr().Network())
	}
	// systemd owns the file: never unlink it.
	ul.SetUnlinkOnClose(false)
	return ul, true, nil
}

// Listener is the socket the server accepts on, with what it takes to give it
// back.
type Listener struct {
	*net.UnixListener
	lock *os.File
}

// Close closes the socket, removes the socket file when clockwatch created it,
// and removes and releases the lock file (removed while still held, and Listen
// checks that the file it locked is still the one at the path, so a racing
// start cannot lock a removed file).
func (l *Listener) Close() error {
	err := l.UnixListener.Close()
	if l.lock != nil {
		_ = os.Remove(l.lock.Name())
		l.lock.Close() // closing releases the flock
		l.lock = nil
	}
	return err
}

// lockFile opens and locks path, retrying when the file locked was removed
// (by a clockwatch stopping) between the open and the lock.
func lockFile(what, path, socket string) (*os.File, error) {
	for try := 0; ; try++ {
		// A dangling link here created its target: never followed.
		lock, err := safefile.OpenFile("the "+what+"'s lock file", path, os.O_CREATE|os.O_RDWR, 0o600)
		if err != nil {
			return nil, fmt.Errorf("opening the %s's lock file: %w", what, err)
		}
		if err := syscall.Flock(int(lock.Fd()), syscall.LOCK_EX|syscall.LOCK_NB); err != nil {
			lock.Close()
			if errors.Is(err, syscall.EWOULDBLOCK) {
				return nil, fmt.Errorf("%s %s: another clockwatch holds %s", what, socket, path)
			}
			return nil, fmt.Errorf("locking %s: %w", path, err)
		}
		held, err1 := lock.Stat()
		named, err2 := os.Stat(path)
		if err1 == nil && err2 == nil && os.SameFile(held, named) {
			return lock, nil
		}
		lock.Close()
		if try == 3 {
			return nil, fmt.Errorf("locking %s: the file keeps being replaced", path)
		}
	}
}

// describe names a file type for an error message.
func describe(m os.FileMode) string {
	switch t := m.Type(); {
	case t == 0:
		return "a regular file"
	case t&os.ModeDir != 0:
		return "a directory"
	case t&os.ModeSymlink != 0:
		return "a symbolic link"
	case t&os.ModeNamedPipe != 0:
		return "a named pipe"
	case t&os.ModeDevice != 0:
		return "a device"
	default:
		return "a " + t.String() + " file"
	}
}

// Listen creates the socket at cfg.Socket: it creates the directory if
// missing, takes an exclusive lock on "<socket>.lock" so two clockwatch
// processes never fight over it, replaces a stale socket file (one nobody
// answers on) but refuses to touch a live one or anything that is not a
// socket, then sets the mode and group.
func Listen(cfg Config) (*Listener, error) {
	mode, err := cfg.FileMode()
	if err != nil {
		return nil, fmt.Errorf("stepdown.mode: %w", err)
	}
	return listen(socketFile{what: "stepdown socket", pathKey: "stepdown.socket", groupKey: "stepdown.group",
		path: cfg.Socket, mode: mode, group: cfg.Group})
}

// socketFile is a socket Listen creates, with the names its errors use.
type socketFile struct {
	what, pathKey, groupKey string
	path                    string
	mode                    uint32
	group                   string
}

// listenReserved creates the reserved socket beside the stepdown socket at
// public (nil when stepdown.reserved_socket is none).
func listenReserved(cfg Config, public string) (*Listener, error) {
	path := cfg.reservedPath(public)
	if path == "" {
		return nil, nil
	}
	f := socketFile{what: "reserved stepdown socket", pathKey: "stepdown.reserved_socket", groupKey: "stepdown.reserved_group",
		path: path, mode: 0o600, group: cfg.ReservedGroup}
	if f.group != "" {
		f.mode = 0o660
	}
	return listen(f)
}

func listen(f socketFile) (*Listener, error) {
	path := f.path
	gid := -1
	if f.group != "" {
		var err error
		if gid, err = lookupGroup(f.groupKey, f.group); err != nil {
			return nil, err
		}
	}
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		return nil, fmt.Errorf("creating the %s's directory: %w", f.what, err)
	}
	lock, err := lockFile(f.what, path+".lock", path)
	if err != nil {
		return nil, err
	}
	unlock := func() {
		_ = os.Remove(lock.Name())
		lock.Close()
	}
	if err := removeStale(f, path); err != nil {
		unlock()
		return nil, err
	}
	ul, err := net.ListenUnix("unix", &net.UnixAddr{Name: path, Net: "unix"})
	if err != nil {
		unlock()
		return nil, fmt.Errorf("listening on the %s: %w", f.what, err)
	}
	l := &Listener{UnixListener: ul, lock: lock}
	if err := os.Chmod(path, os.FileMode(f.mode)); err != nil {
		l.Close()
		return nil, fmt.Errorf("setting the %s's mode to %04o: %w", f.what, f.mode, err)
	}
	if gid >= 0 {
		if err := os.Lchown(path, -1, gid); err != nil {
			l.Close()
			return nil, fmt.Errorf("giving the %s to group %s (clockwatch must be a member of it or have CAP_CHOWN): %w", f.what, f.group, err)
		}
	}
	return l, nil
}

// removeStale removes path if it is a socket nobody listens on.
func removeStale(f socketFile, path string) error {
	st, err := os.Lstat(path)
	if errors.Is(err, os.ErrNotExist) {
		return nil
	}
	if err != nil {
		return fmt.Errorf("checking the %s: %w", f.what, err)
	}
	if st.Mode()&os.ModeSocket == 0 {
		return fmt.Errorf("%s %s exists and is %s, not a socket: refusing to replace it (remove it, or set %s to another path)", f.what, path, describe(st.Mode()), f.pathKey)
	}
	c, err := net.DialTimeout("unix", path, time.Second)
	if err == nil {
		c.Close()
		return fmt.Errorf("%s %s is live: another process is serving it", f.what, path)
	}
	if !errors.Is(err, syscall.ECONNREFUSED) {
		return fmt.Errorf("probing the existing %s %s: %w", f.what, path, err)
	}
	if err := os.Remove(path); err != nil {
		return fmt.Errorf("removing the stale %s: %w", f.what, err)
	}
	return nil
}

// Close gives back the socket Listen opened when Run will not be called (a
// start that failed after it): the socket file and its lock file go with
// it. Run must not be called after Close.
func (s *Server) Close() error {
	s.sub.Close()
	if s.l == nil {
		return nil
	}
	err := s.l.Close()
	s.l = nil
	if s.rl != nil {
		err = errors.Join(err, s.rl.Close())
		s.rl = nil
	}
	return err
}

// lookupGroup resolves the group name or gid of the setting key.
func lookupGroup(key, name string) (int, error) {
	if gid, err := strconv.Atoi(name); err == nil && gid >= 0 {
		return gid, nil
	}
	g, err := user.LookupGroup(name)
	if err != nil {
		return 0, fmt.Errorf("%s: %w", key, err)
	}
	gid, err := strconv.Atoi(g.Gid)
	if err != nil {
		return 0, fmt.Errorf("%s: group %s has gid %q: %w", key, name, g.Gid, err)
	}
	return gid, nil
}
