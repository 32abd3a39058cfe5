package ptp

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"net"
	"os"
	"path/filepath"
	"sync/atomic"
	"syscall"
)

// unixDialer is the real Dialer: a unix datagram socket bound to an
// abstract name, or to a file in dir, connected to ptp4l's socket.
type unixDialer struct {
	dir     string
	counter atomic.Uint64
}

var _ Dialer = (*unixDialer)(nil)

// newUnixDialer starts the dialer's counter at a random point: two clients
// in one process (a reload, a test) would otherwise bind the same abstract
// name, PID.1, and the second would fail with "address already in use".
func newUnixDialer(dir string) *unixDialer {
	u := &unixDialer{dir: dir}
	u.counter.Store(uint64(rand.Uint32()) << 16)
	return u
}

// Dial implements Dialer.
func (u *unixDialer) Dial(_ context.Context, path string) (Conn, error) {
	n := u.counter.Add(1)
	name := fmt.Sprintf("clockwatch-ptp4l.%d.%d", os.Getpid(), n)
	local := "@" + name // abstract: no file to remove, no permission to grant
	if u.dir != "" {
		local = filepath.Join(u.dir, name+".sock")
		_ = os.Remove(local) // left by a process that had this PID
	}
	conn, err := net.DialUnix("unixgram", &net.UnixAddr{Name: local, Net: "unixgram"}, &net.UnixAddr{Name: path, Net: "unixgram"})
	if err != nil {
		if u.dir != "" {
			os.Remove(local)
		}
		return nil, explainDial(path, local, err)
	}
	if u.dir == "" {
		return conn, nil
	}
	// ptp4l may run under another user than clockwatch: let it reply. A
	// stranger's datagram is dropped by the sequence check.
	if err := os.Chmod(local, 0o666); err != nil {
		conn.Close()
		os.Remove(local)
		return nil, fmt.Errorf("making the reply socket %s writable for ptp4l: %w", local, err)
	}
	return &fileConn{UnixConn: conn, path: local}, nil
}

func explainDial(path, local string, err error) error {
	switch {
	case errors.Is(err, os.ErrNotExist):
		return fmt.Errorf("ptp4l's socket %s does not exist: ptp4l is not running, or its uds_address is elsewhere (set ptp.address): %w", path, err)
	case errors.Is(err, os.ErrPermission):
		return fmt.Errorf("no permission to write to ptp4l's socket %s (or to bind %s): run clockwatch in the socket's group (linuxptp 3.1 creates it 0660 with ptp4l's group): %w", path, local, err)
	case errors.Is(err, syscall.ECONNREFUSED):
		return fmt.Errorf("nothing listens on %s: ptp4l is not running (the socket is left from an earlier run): %w", path, err)
	}
	return fmt.Errorf("connecting to ptp4l's socket %s: %w", path, err)
}

// fileConn removes its reply socket file when closed.
type fileConn struct {
	*net.UnixConn
	path string
}

func (f *fileConn) Close() error {
	err := f.UnixConn.Close()
	if rerr := os.Remove(f.path); rerr != nil && !errors.Is(rerr, os.ErrNotExist) && err == nil {
		err = rerr
	}
	return err
}
