package socket

import (
	"fmt"
	"net"
	"os"
	"sync/atomic"
	"syscall"

	"golang.org/x/sys/unix"
)

// PeerCred reads SO_PEERCRED of an accepted connection's descriptor: the
// pid, uid and gid of the process that connected.
func PeerCred(fd int) (Cred, error) {
	uc, err := unix.GetsockoptUcred(fd, unix.SOL_SOCKET, unix.SO_PEERCRED)
	if err != nil {
		return Cred{}, fmt.Errorf("reading SO_PEERCRED: %w", err)
	}
	return Cred{PID: uc.Pid, UID: uc.Uid, GID: uc.Gid}, nil
}

// acceptor accepts connections on a listening unix socket as bare
// non-blocking descriptors, waiting in Go's poller while there is none: a
// connection that is refused costs no allocation, no *net.UnixConn and no
// garbage for the collector (a connection flood made the collector run all
// the time, and its workers took the processors the announcements needed).
// It works on its own copy of the listener's descriptor (a net.Listener's
// raw connection cannot wait for reading); close it as well as the
// listener.
type acceptor struct {
	f      *os.File
	rc     syscall.RawConn
	closed atomic.Bool
	// What the callback, made once, leaves (only accept's goroutine).
	nfd      int
	aerr     error
	callback func(fd uintptr) bool
}

func newAcceptor(l net.Listener) (*acceptor, error) {
	sc, ok := l.(syscall.Conn)
	if !ok {
		return nil, fmt.Errorf("the listener is a %T, not a unix socket's", l)
	}
	rc, err := sc.SyscallConn()
	if err != nil {
		return nil, err
	}
	dup := -1
	var derr error
	if err := rc.Control(func(fd uintptr) { dup, derr = unix.FcntlInt(fd, unix.F_DUPFD_CLOEXEC, 0) }); err != nil {
		return nil, err
	}
	if derr != nil {
		return nil, os.NewSyscallError("fcntl(F_DUPFD_CLOEXEC)", derr)
	}
	if err := unix.SetNonblock(dup, true); err != nil {
		unix.Close(dup)
		return nil, os.NewSyscallError("setting O_NONBLOCK", err)
	}
	a := &acceptor{f: os.NewFile(uintptr(dup), "stepdown-listener")}
	if a.rc, err = a.f.SyscallConn(); err != nil {
		a.f.Close()
		return nil, err
	}
	a.callback = func(fd uintptr) bool {
		// accept4 without the peer's address: unix.Accept4 allocates
		// one for every connection.
		nfd, _, errno := unix.Syscall6(unix.SYS_ACCEPT4, fd, 0, 0, unix.SOCK_NONBLOCK|unix.SOCK_CLOEXEC, 0, 0)
		for errno == unix.EINTR {
			nfd, _, errno = unix.Syscall6(unix.SYS_ACCEPT4, fd, 0, 0, unix.SOCK_NONBLOCK|unix.SOCK_CLOEXEC, 0, 0)
		}
		a.nfd, a.aerr = int(nfd), nil
		if errno != 0 {
			a.nfd, a.aerr = -1, errno
		}
		return errno != unix.EAGAIN
	}
	return a, nil
}

// accept returns the next connection's descriptor (non-blocking,
// close-on-exec); once close is called, an error that is os.ErrClosed.
func (a *acceptor) accept() (int, error) {
	a.nfd, a.aerr = -1, nil
	err := a.rc.Read(a.callback)
	if a.closed.Load() {
		// The file's "use of closed file" is not os.ErrClosed.
		if err == nil && a.aerr == nil {
			unix.Close(a.nfd)
		}
		return -1, os.ErrClosed
	}
	if err != nil {
		return -1, err
	}
	if a.aerr != nil {
		return -1, os.NewSyscallError("accept4", a.aerr)
	}
	return a.nfd, nil
}

func (a *acceptor) close() error {
	a.closed.Store(true)
	return a.f.Close()
}

// fdConn makes an admitted connection's descriptor a *net.UnixConn (which
// takes a copy of the descriptor; fd is closed).
func fdConn(fd int) (*net.UnixConn, error) {
	f := os.NewFile(uintptr(fd), "stepdown-client")
	defer f.Close()
	c, err := net.FileConn(f)
	if err != nil {
		return nil, err
	}
	uc, ok := c.(*net.UnixConn)
	if !ok {
		c.Close()
		return nil, fmt.Errorf("accepted a %T, not a unix connection", c)
	}
	return uc, nil
}
