package socket

import (
	"errors"
	"fmt"
	"os"
	"sync"
	"syscall"

	"golang.org/x/sys/unix"
)

// inputPoller waits for input on every client's socket with one epoll
// instance, which itself waits in Go's poller: a subscriber, which reads
// nothing but sends an ack now and then, needs no goroutine of its own
// (a goroutine's smallest stack, 2 KiB, would be half its budget). Its
// goroutine (run) acts on the input of one client at a time, without
// blocking.
type inputPoller struct {
	ep  *os.File // the epoll instance, in Go's poller
	raw syscall.RawConn

	mu      sync.Mutex
	clients map[uint64]*client
	lastID  uint64

	// serveWaiting's events, their count and its epoll_wait, made once:
	// it runs between every two slices of a fan-out, and one fan-out
	// goroutine at a time calls it.
	waiting     [16]unix.EpollEvent
	nWaiting    int
	pollWaiting func(fd uintptr)
}

func newInputPoller() (*inputPoller, error) {
	fd, err := unix.EpollCreate1(unix.EPOLL_CLOEXEC)
	if err != nil {
		return nil, fmt.Errorf("epoll_create1 for the clients' input: %w", err)
	}
	if err := unix.SetNonblock(fd, true); err != nil {
		unix.Close(fd)
		return nil, fmt.Errorf("epoll for the clients' input: setting O_NONBLOCK: %w", err)
	}
	ep := os.NewFile(uintptr(fd), "stepdown-input-epoll")
	raw, err := ep.SyscallConn()
	if err != nil {
		ep.Close()
		return nil, fmt.Errorf("epoll for the clients' input: %w", err)
	}
	p := &inputPoller{ep: ep, raw: raw, clients: map[uint64]*client{}}
	p.pollWaiting = p.epollWaiting
	return p, nil
}

// add watches c's socket for input, unless c is closed. c's input may be
// acted on from then on.
func (p *inputPoller) add(c *client) error {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.closed {
		return nil
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	p.lastID++
	id := p.lastID
	ev := unix.EpollEvent{Events: unix.EPOLLIN | unix.EPOLLRDHUP, Fd: int32(uint32(id)), Pad: int32(uint32(id >> 32))}
	var err error
	if cerr := p.ctl(c, func(ep, fd int) { err = unix.EpollCtl(ep, unix.EPOLL_CTL_ADD, fd, &ev) }); cerr != nil {
		err = cerr
	}
	if err != nil {
		return fmt.Errorf("epoll_ctl: %w", err)
	}
	c.pollID = id
	p.clients[id] = c
	return nil
}

// remove stops watching c; it may be called more than once. An event of c
// already taken finds no client and is ignored.
func (p *inputPoller) remove(c *client) {
	p.mu.Lock()
	defer p.mu.Unlock()
	if c.pollID == 0 || p.clients[c.pollID] != c {
		return
	}
	delete(p.clients, c.pollID)
	// Closing the socket would also take it out of the epoll set; a
	// client cut off still has its error to be written first.
	p.ctl(c, func(ep, fd int) { unix.EpollCtl(ep, unix.EPOLL_CTL_DEL, fd, nil) })
}

// ctl calls f with the epoll instance's descriptor and c's, both kept open
// meanwhile (os.File.Fd would make the instance blocking). When either is
// closed, f is not called and err says so.
func (p *inputPoller) ctl(c *client, f func(ep, fd int)) (err error) {
	cerr := c.raw.Control(func(fd uintptr) {
		err = p.raw.Control(func(ep uintptr) { f(int(ep), int(fd)) })
	})
	if cerr != nil {
		return cerr
	}
	return err
}

// run acts on the clients' input until close.
func (p *inputPoller) run() {
	events := make([]unix.EpollEvent, 128)
	var n int
	var werr error
	wait := func(fd uintptr) bool {
		for {
			n, werr = unix.EpollWait(int(fd), events, 0)
			if werr != unix.EINTR {
				return n > 0 || werr != nil
			}
		}
	}
	for {
		if err := p.raw.Read(wait); err != nil {
			return // closed
		}
		if werr != nil {
			// Not expected of a valid epoll instance with a valid
			// buffer: nothing to wait for anymore.
			return
		}
		p.act(events[:n])
	}
}

// act acts on the input of the clients the events name.
func (p *inputPoller) act(events []unix.EpollEvent) {
	for _, ev := range events {
		id := uint64(uint32(ev.Fd)) | uint64(uint32(ev.Pad))<<32
		p.mu.Lock()
		c := p.clients[id]
		p.mu.Unlock()
		if c != nil {
			c.readable()
		}
	}
}

// serveWaiting acts on the input waiting now, without blocking, from the
// caller's goroutine: the fan-out's, between two slices. Go's scheduler
// looks at the network only when a processor runs out of goroutines, so
// with one processor a fan-out's slices would hold a drill or an ack back
// for all of their writes; asking Go to poll (a sleep) costs a millisecond
// a slice when input never stops (thousands of subscribers' acks). run may
// be handed the same events (the instance is level-triggered): a client
// reads under its own lock, until its socket has no more.
func (p *inputPoller) serveWaiting() {
	p.nWaiting = 0
	p.raw.Control(p.pollWaiting) // closed: nothing waits
	p.act(p.waiting[:p.nWaiting])
}

// epollWaiting is serveWaiting's look at the instance, which waits for
// nothing.
func (p *inputPoller) epollWaiting(fd uintptr) {
	for {
		n, err := unix.EpollWait(int(fd), p.waiting[:], 0)
		if err != unix.EINTR {
			if err == nil {
				p.nWaiting = n
			}
			return
		}
	}
}

// close ends run.
func (p *inputPoller) close() error {
	if err := p.ep.Close(); err != nil && !errors.Is(err, os.ErrClosed) {
		return err
	}
	return nil
}
