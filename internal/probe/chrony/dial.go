package chrony

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"net"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"time"

	"github.com/clockwatch/clockwatch/internal/rawio"
)

// Transport says how clockwatch reaches chronyd. chronyd answers every
// monitoring command on its unix socket but only tracking, sources,
// sourcestats and activity on its UDP command port.
type Transport string

// The transports.
const (
	TransportUnix Transport = "unix"
	TransportUDP  Transport = "udp"
)

// Dialer opens a connection to chronyd.
type Dialer interface {
	// Dial returns a connection, how it reaches chronyd and the address
	// (socket path or host:port) it reaches.
	Dial(ctx context.Context) (Conn, Transport, string, error)
}

// netDialer is the real Dialer: unix datagram socket or UDP.
type netDialer struct {
	address  string // "auto", a path or host:port
	replyDir string // "" means choose
	// runtimeDir is $RUNTIME_DIRECTORY (Config.Resolve), "" when unset.
	runtimeDir string
	pid        int
	counter    atomic.Uint64
	// udpNext rotates through the UDP candidates of "auto" after failures.
	udpNext atomic.Uint64
	// socketPaths and udpAddrs are the candidates of "auto".
	socketPaths, udpAddrs []string
	// swept are the reply directories already cleared of stale sockets.
	sweptMu sync.Mutex
	swept   map[string]bool
}

var _ Dialer = (*netDialer)(nil)

func newNetDialer(cfg Config) *netDialer {
	d := &netDialer{
		address:     cfg.Address,
		replyDir:    cfg.ReplySocketDir,
		runtimeDir:  cfg.RuntimeDir,
		pid:         os.Getpid(),
		socketPaths: defaultSocketPaths(),
		udpAddrs:    defaultUDPAddresses(),
	}
	// The daemon runs two dialers (the poller's and the server side's),
	// and tests run several daemons in one process: a count of their own
	// from a random start keeps their reply sockets' names apart (two that
	// met bound "address already in use", and chronyd went unread).
	d.counter.Store(uint64(rand.Uint32()) << 16)
	return d
}

// Dial implements Dialer. With "auto" it uses the first unix socket that
// exists and can be opened, and otherwise UDP on loopback, moving to the next
// loopback address each time it is called again after a failure.
func (d *netDialer) Dial(ctx context.Context) (Conn, Transport, string, error) {
	switch {
	case d.address == AddressAuto:
		var unixErr error
		for _, p := range d.socketPaths {
			if _, err := os.Stat(p); err != nil {
				if errors.Is(err, os.ErrNotExist) {
					continue
				}
				unixErr = explainDial(p, err)
				break
			}
			c, err := d.dialUnix(p)
			if err == nil {
				return c, TransportUnix, p, nil
			}
			unixErr = err
			break
		}
		// The first dial tries the first address; each later dial (after a
		// failure) the next one.
		a := d.udpAddrs[(d.udpNext.Add(1)-1)%uint64(len(d.udpAddrs))]
		c, err := d.dialUDP(ctx, a)
		if err != nil {
			return nil, TransportUDP, a, errors.Join(unixErr, err)
		}
		// A socket that exists but cannot be used is worth reporting even
		// though UDP works: it limits what clockwatch can read.
		return c, TransportUDP, a, unixErr
	case filepath.IsAbs(d.address):
		c, err := d.dialUnix(d.address)
		return c, TransportUnix, d.address, err
	default:
		c, err := d.dialUDP(ctx, d.address)
		return c, TransportUDP, d.address, err
	}
}

func (d *netDialer) dialUDP(ctx context.Context, addr string) (Conn, error) {
	var nd net.Dialer
	c, err := nd.DialContext(ctx, "udp", addr)
	if err != nil {
		return nil, fmt.Errorf("opening UDP to chronyd's command port %s: %w", addr, err)
	}
	return rawio.WrapSpinning(c, replySpin), nil
}

// replySpin is how long a read of chronyd's replies keeps trying before it
// waits: chronyd answers a window of requests one after another within
// microseconds, and a reader that waited in the poller after each reply
// woke its thread 37 times a poll for 8 sources (perf), 4 with the spin.
const replySpin = 200 * time.Microsecond

// replyDirs lists where the reply socket may go, best first.
func (d *netDialer) replyDirs(socket string) []string {
	if d.replyDir != "" {
		return []string{d.replyDir}
	}
	dirs := []string{filepath.Dir(socket)}
	if d.runtimeDir != "" {
		dirs = append(dirs, d.runtimeDir)
	}
	return append(dirs, "/run/clockwatch")
}

// dialUnix binds a reply socket of our own (chronyd sends its replies to
// the sender's address, and ignores senders in the abstract namespace),
// makes it writable for chronyd's user and connects it to chronyd's socket.
func (d *netDialer) dialUnix(socket string) (Conn, error) {
	raddr := &net.UnixAddr{Name: socket, Net: "unixgram"}
	var bindErrs []error
	for _, dir := range d.replyDirs(socket) {
		d.sweepOnce(dir)
		name := filepath.Join(dir, "clockwatch."+strconv.Itoa(d.pid)+"."+strconv.FormatUint(d.counter.Add(1), 10)+".sock")
		laddr := &net.UnixAddr{Name: name, Net: "unixgram"}
		c, err := net.ListenUnixgram("unixgram", laddr)
		if err != nil {
			bindErrs = append(bindErrs, err)
			continue
		}
		// chronyd may run as another user (_chrony): let it send to us.
		if err := os.Chmod(name, 0o666); err != nil {
			c.Close()
			os.Remove(name)
			return nil, fmt.Errorf("making reply socket %s writable for chronyd: %w", name, err)
		}
		uc := &unixConn{UnixConn: c, local: name, remote: raddr}
		if err := uc.connect(); err != nil {
			uc.Close()
			return nil, explainDial(socket, err)
		}
		// Raw reads and writes: a poll's requests and replies then wake
		// only the thread that waits for them (internal/rawio).
		return rawio.WrapSpinning(uc, replySpin), nil
	}
	return nil, fmt.Errorf("cannot create a reply socket for chronyd in %v (%w): set chrony.reply_socket_dir to a directory clockwatch can write to and chronyd can reach (not a private /tmp; with systemd, RuntimeDirectory=clockwatch gives /run/clockwatch)",
		d.replyDirs(socket), errors.Join(bindErrs...))
}

// sweepOnce removes, the first time dir is used, the reply sockets that
// clockwatch processes which died left there (a kill -9, an OOM kill: Close
// never ran): chronyd's directory would otherwise fill with them over
// restarts. A socket is stale when nobody has it bound: a datagram connect
// to it is refused. That holds across PID namespaces (a clockwatch in a
// container sharing /run/chrony has its PID elsewhere), where a test of the
// PID would remove a live one.
func (d *netDialer) sweepOnce(dir string) {
	d.sweptMu.Lock()
	defer d.sweptMu.Unlock()
	if d.swept[dir] {
		return
	}
	if d.swept == nil {
		d.swept = map[string]bool{}
	}
	d.swept[dir] = true
	own := "clockwatch." + strconv.Itoa(d.pid) + "."
	matches, _ := filepath.Glob(filepath.Join(dir, "clockwatch.*.*.sock"))
	for _, m := range matches {
		if strings.HasPrefix(filepath.Base(m), own) {
			continue
		}
		if staleSocket(m) {
			_ = os.Remove(m) // best effort: another sweeper may be first
		}
	}
}

// staleSocket reports whether the unix datagram socket file at path has
// nobody bound to it.
func staleSocket(path string) bool {
	fd, err := syscall.Socket(syscall.AF_UNIX, syscall.SOCK_DGRAM|syscall.SOCK_CLOEXEC, 0)
	if err != nil {
		return false
	}
	defer syscall.Close(fd)
	return errors.Is(syscall.Connect(fd, &syscall.SockaddrUnix{Name: path}), syscall.ECONNREFUSED)
}

// unixConn is a bound unix datagram socket that sends to chronyd's socket
// and removes its own socket file when closed.
type unixConn struct {
	*net.UnixConn
	local  string
	remote *net.UnixAddr
}

// connect checks that chronyd's socket can be written to, so that
// permission problems surface at dial time with a clear message.
func (c *unixConn) connect() error {
	rc, err := c.SyscallConn()
	if err != nil {
		return err
	}
	var cerr error
	err = rc.Control(func(fd uintptr) {
		cerr = syscall.Connect(int(fd), &syscall.SockaddrUnix{Name: c.remote.Name})
	})
	if err != nil {
		return err
	}
	return cerr
}

// Close closes the socket and removes its file.
func (c *unixConn) Close() error {
	err := c.UnixConn.Close()
	if rerr := os.Remove(c.local); rerr != nil && !errors.Is(rerr, os.ErrNotExist) && err == nil {
		err = rerr
	}
	return err
}

// explainDial turns the errors of opening chronyd's socket into a sentence
// that says how to fix them.
func explainDial(socket string, err error) error {
	switch {
	case errors.Is(err, syscall.EACCES), errors.Is(err, syscall.EPERM):
		return fmt.Errorf("permission denied on chronyd's socket %s (%w): run clockwatch in the group that owns it (_chrony on Debian and Ubuntu, chrony on Fedora and RHEL), or set chrony.address to 127.0.0.1:323 (UDP only gives tracking and sources)", socket, err)
	case errors.Is(err, syscall.ENOENT):
		return fmt.Errorf("chronyd's socket %s does not exist (%w): is chronyd running? Set chrony.address if its socket is elsewhere", socket, err)
	case errors.Is(err, syscall.ECONNREFUSED):
		return fmt.Errorf("nothing answers on chronyd's socket %s (%w): chronyd is not running", socket, err)
	}
	return fmt.Errorf("connecting to chronyd's socket %s: %w", socket, err)
}
