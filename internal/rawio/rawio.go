package rawio

import (
	"errors"
	"net"
	"os"
	"syscall"
	"time"
	"unsafe"
)

// Conn is a datagram socket whose Read and Write are raw system calls;
// everything else (deadlines, Close, the addresses) is the wrapped
// connection's.
type Conn struct {
	net.Conn
	rc syscall.RawConn
	// spin is how long a read that finds nothing tries again before it
	// waits in the poller (WrapSpinning).
	spin time.Duration
}

// syscallConn is what Wrap needs of a connection: *net.UnixConn,
// *net.UDPConn and types that embed them fit.
type syscallConn interface {
	net.Conn
	SyscallConn() (syscall.RawConn, error)
}

// Wrap returns c with raw reads and writes, or c itself when it has no file
// descriptor to make them on (a test's connection).
func Wrap(c net.Conn) net.Conn { return WrapSpinning(c, 0) }

// WrapSpinning is Wrap with reads that, finding no datagram, try again for
// up to spin before they wait in the poller: for a peer that answers a
// window of requests one after another within microseconds (chronyd), so
// that the reader takes the whole burst on one wake-up instead of waking
// once per reply. The spin costs at most spin of CPU per read that waits.
func WrapSpinning(c net.Conn, spin time.Duration) net.Conn {
	sc, ok := c.(syscallConn)
	if !ok {
		return c
	}
	rc, err := sc.SyscallConn()
	if err != nil {
		return c
	}
	return &Conn{Conn: c, rc: rc, spin: spin}
}

// Read reads one datagram into p, waiting in the network poller until one
// comes or the read deadline passes.
func (c *Conn) Read(p []byte) (int, error) {
	var n int
	var errno syscall.Errno
	spun := c.spin <= 0
	err := c.rc.Read(func(fd uintptr) bool {
		n, errno = rawCall(syscall.SYS_READ, fd, p)
		if errno != syscall.EAGAIN || spun {
			return errno != syscall.EAGAIN
		}
		spun = true
		for until := time.Now().Add(c.spin); time.Now().Before(until); {
			if n, errno = rawCall(syscall.SYS_READ, fd, p); errno != syscall.EAGAIN {
				return true
			}
		}
		return false
	})
	return n, c.opError("read", err, errno)
}

// Write sends p as one datagram, waiting in the network poller while the
// socket's queue is full, until the write deadline.
func (c *Conn) Write(p []byte) (int, error) {
	var n int
	var errno syscall.Errno
	err := c.rc.Write(func(fd uintptr) bool {
		n, errno = rawCall(syscall.SYS_WRITE, fd, p)
		return errno != syscall.EAGAIN
	})
	return n, c.opError("write", err, errno)
}

// rawCall is read(2) or write(2) of p on fd, with EINTR retried.
func rawCall(trap, fd uintptr, p []byte) (int, syscall.Errno) {
	var buf [1]byte
	ptr := unsafe.Pointer(&buf[0]) // a zero-length datagram needs an address too
	if len(p) > 0 {
		ptr = unsafe.Pointer(&p[0])
	}
	for {
		r, _, e := syscall.RawSyscall(trap, fd, uintptr(ptr), uintptr(len(p)))
		if e == syscall.EINTR {
			continue
		}
		if e != 0 {
			return 0, e
		}
		return int(r), 0
	}
}

// opError is the error net's Read or Write would have returned: a
// *net.OpError naming the operation and the addresses, with the poller's
// error (a deadline, a closed connection) or the system call's.
func (c *Conn) opError(op string, pollErr error, errno syscall.Errno) error {
	var err error
	switch {
	case pollErr != nil:
		// The raw connection's own *net.OpError says "raw-read": keep
		// what it wraps (a deadline, a closed connection).
		err = pollErr
		if oe, ok := pollErr.(*net.OpError); ok {
			err = oe.Err
		}
	case errno != 0:
		err = os.NewSyscallError(op, errno)
	default:
		return nil
	}
	if errors.Is(err, os.ErrClosed) {
		err = net.ErrClosed
	}
	oe := &net.OpError{Op: op, Err: err}
	if a := addr(c.LocalAddr()); a != nil {
		oe.Net, oe.Source = a.Network(), a
	}
	oe.Addr = addr(c.RemoteAddr())
	return oe
}

// addr is a, or nil when a holds a nil address (an unbound or unconnected
// side of a unix socket: its Network would panic).
func addr(a net.Addr) net.Addr {
	switch a := a.(type) {
	case *net.UnixAddr:
		if a == nil {
			return nil
		}
	case *net.UDPAddr:
		if a == nil {
			return nil
		}
	}
	return a
}
