package socket

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net"
	"sync"
	"syscall"
	"time"

	"github.com/clockwatch/clockwatch/stepdown"
)

// drop removes c and closes it.
func (s *Server) drop(c *client, cause string) {
	s.mu.Lock()
	s.removeLocked(c)
	s.mu.Unlock()
	c.shutdown(cause)
}

// client is one subscriber. At rest it costs its connection, this struct
// and its place in the input poller: no goroutine, no read buffer, no queue
// until they have something to do or hold.
type client struct {
	s *Server
	// id counts admissions: the order clients came in.
	id      uint64
	conn    *net.UnixConn
	raw     syscall.RawConn
	cred    Cred
	credErr error
	done    chan struct{}
	once    sync.Once
	// The input side, under inMu: used on the input poller's goroutine,
	// and on the writer's once when the peer has gone (what it sent
	// before is still acted on): the line reader, the flood limit's token
	// bucket, the last ack and the watch_peer requests served.
	inMu        sync.Mutex
	in          lineReader
	tokens      float64
	last        time.Time
	lastAck     uint64
	peerWatches int
	// pollID names the client in the input poller (guarded by its mu).
	pollID uint64
	// helloSeq is the seq of the hello: events after it were sent to this
	// connection, and only their acks measure the ack latency.
	helloSeq uint64

	// mu guards what follows. It is never held across a blocking call:
	// the fast path's write does not block.
	mu sync.Mutex
	// queue holds the messages waiting for the writer goroutine, at most
	// QueueSize (a nil entry: close after what came before); nil when
	// empty. writing says a writer goroutine runs: while it does, or while
	// anything is queued, a message may not be written directly, so that
	// messages never overtake each other.
	queue   [][]byte
	writing bool
	closed  bool
	// closeCause is set with a nil entry.
	closeCause string

	// direct is the message of the fast path and directN what was
	// written; directWrite, made once, writes it (a closure per message
	// would be an allocation per subscriber per event).
	direct      []byte
	directN     int
	directWrite func(fd uintptr)
}

func (c *client) writeDirect(fd uintptr) {
	n, err := syscall.Write(int(fd), c.direct)
	if err != nil {
		n = 0
	}
	c.directN = n
}

// send delivers b, or queues it for a writer goroutine; it never blocks.
// It reports false when the queue is full.
func (c *client) send(b []byte) bool {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.sendLocked(b)
}

func (c *client) sendLocked(b []byte) bool {
	if c.closed {
		return true // gone: nothing to deliver, nobody to cut off
	}
	if !c.writing && len(c.queue) == 0 {
		// Fast path: a non-blocking write straight from the caller (the
		// broadcast, mostly). Only what the socket buffer cannot take
		// needs a writer goroutine.
		c.direct, c.directN = b, 0
		c.raw.Control(c.directWrite)
		n := c.directN
		c.direct = nil
		if n == len(b) {
			return true
		}
		b = b[n:]
	}
	return c.enqueueLocked(b)
}

// enqueueLocked queues b (nil: close after what came before) and starts the
// writer goroutine if none runs.
func (c *client) enqueueLocked(b []byte) bool {
	if len(c.queue) >= c.s.cfg.QueueSize {
		return false
	}
	c.queue = append(c.queue, b)
	if !c.writing {
		// Run waits for the client's shutdown before it waits for the
		// goroutines, and a closed client starts none: Add never races
		// Wait.
		c.writing = true
		c.s.wg.Add(1)
		go c.writeLoop()
	}
	return true
}

func (c *client) shutdown(cause string) {
	c.once.Do(func() {
		c.mu.Lock()
		c.closed, c.queue = true, nil
		c.mu.Unlock()
		c.s.poller.remove(c)
		close(c.done)
		c.conn.Close()
		c.s.met.disconnects.WithLabelValues(cause).Inc()
		// Debug: any member of the socket's group can connect and
		// disconnect in a loop (the metrics count every disconnect).
		c.s.log.Debug("stepdown client disconnected", "pid", c.cred.PID, "uid", c.cred.UID, "cause", cause)
	})
}

// sendError sends an error message to this client only.
func (c *client) sendError(code, msg string) {
	b := stepdown.Message{Type: stepdown.TypeError, Code: code, Error: msg}.AppendLine(nil)
	c.s.met.clientErrors.WithLabelValues(code).Inc()
	if c.send(b) {
		c.s.met.messagesSent.WithLabelValues(stepdown.TypeError).Inc()
	} else {
		c.s.drop(c, CauseLaggard)
	}
}

// fail sends an error and closes the connection once it is written.
func (c *client) fail(code, cause, msg string) {
	c.s.mu.Lock()
	c.s.removeLocked(c)
	c.s.mu.Unlock()
	c.s.limit.Log(slog.LevelInfo, "stepdown client misbehaved: disconnected", "pid", c.cred.PID, "uid", c.cred.UID, "cause", cause, "err", msg)
	// Nothing more is read from it (its input would keep the poller busy
	// while the error waits to be written).
	c.s.poller.remove(c)
	b := stepdown.Message{Type: stepdown.TypeError, Code: code, Error: msg}.AppendLine(nil)
	c.s.met.clientErrors.WithLabelValues(code).Inc()
	c.mu.Lock()
	c.closeCause = cause
	// Written at once, the error needs no writer: close now. Queued, the
	// writer closes after it.
	later := c.sendLocked(b) && (c.writing || len(c.queue) > 0) && c.enqueueLocked(nil)
	c.mu.Unlock()
	if !later {
		c.shutdown(cause)
	}
}

// writeLoop writes what is queued, a batch per system call, and ends once
// the queue is empty: a client that keeps up has no writer goroutine.
func (c *client) writeLoop() {
	defer c.s.wg.Done()
	var buf []byte
	for {
		c.mu.Lock()
		if c.closed || len(c.queue) == 0 {
			c.writing, c.queue = false, nil
			c.mu.Unlock()
			return
		}
		k, closing := 0, false
		for k < len(c.queue) && k < writeBatch && !closing {
			closing = c.queue[k] == nil
			k++
		}
		batch := c.queue[:k]
		c.queue = c.queue[k:]
		c.mu.Unlock()
		buf = buf[:0]
		for _, b := range batch {
			buf = append(buf, b...)
		}
		clear(batch) // the writer's part of the queue's array: let the lines go
		if len(buf) > 0 {
			// No deadline: the write waits in Go's poller for the
			// client to read, as long as its queue has room. A client
			// that takes nothing for queue_size messages is dropped by
			// the broadcast that finds its queue full (a laggard), which
			// closes the connection and ends this write. (A 5 s deadline
			// dropped a client that paused for 15 s: the kernel's 8 KiB
			// send buffer holds a handful of lines, not the queue's 64.)
			_, err := c.conn.Write(buf)
			if err != nil {
				if errors.Is(err, syscall.EPIPE) || errors.Is(err, syscall.ECONNRESET) {
					// The peer is gone, but what it sent before it
					// went is still to be read: a drill sent just
					// before closing, perhaps before its hello
					// could be written.
					c.readable()
				}
				c.s.drop(c, CauseWriteError)
				return
			}
		}
		if closing {
			c.shutdown(c.closeCause)
			return
		}
	}
}

// errLineTooLong is a line of more than stepdown.MaxLineBytes; errNoLine
// says no complete line has come yet.
var (
	errLineTooLong = errors.New("line too long")
	errNoLine      = errors.New("no complete line yet")
)

// readBuffer is what a client reads into, for the moment of a read.
type readBuffer = [stepdown.MaxLineBytes]byte

// lineReader splits a client's input into lines without blocking. It holds
// only what came after the last complete line (nil when nothing did), at
// most stepdown.MaxLineBytes.
type lineReader struct {
	raw syscall.RawConn
	// bufs lend a buffer for the moment of a read (the server's: a client
	// holds none).
	bufs *sync.Pool
	in   []byte
	// read is the callback of raw.Control, made once; n and err are its
	// results.
	read func(fd uintptr)
	n    int
	err  error
}

func (r *lineReader) init(raw syscall.RawConn, bufs *sync.Pool) {
	r.raw, r.bufs = raw, bufs
	r.read = r.readFD
}

// readFD reads what fd has, into a pooled buffer, and appends it to in.
func (r *lineReader) readFD(fd uintptr) {
	buf := r.bufs.Get().(*readBuffer)
	defer r.bufs.Put(buf)
	n, err := syscall.Read(int(fd), buf[:stepdown.MaxLineBytes-len(r.in)])
	for err == syscall.EINTR {
		n, err = syscall.Read(int(fd), buf[:stepdown.MaxLineBytes-len(r.in)])
	}
	r.n, r.err = n, err
	if n > 0 {
		// A new array sized to what is held: a long line's array goes
		// with the line.
		r.in = append(append(make([]byte, 0, len(r.in)+n), r.in...), buf[:n]...)
	}
}

// next returns the next line, valid until the following call, reading only
// when no complete line is held; errNoLine when the socket has no more.
func (r *lineReader) next() ([]byte, error) {
	for {
		if i := bytes.IndexByte(r.in, '\n'); i >= 0 {
			line := r.in[:i+1]
			r.in = r.in[i+1:]
			if len(r.in) == 0 {
				r.in = nil
			}
			return line, nil
		}
		if len(r.in) >= stepdown.MaxLineBytes {
			return nil, errLineTooLong
		}
		if err := r.raw.Control(r.read); err != nil {
			return nil, err
		}
		switch {
		case r.err == syscall.EAGAIN:
			return nil, errNoLine
		case r.err != nil:
			return nil, r.err
		case r.n == 0:
			return nil, io.EOF
		}
	}
}

// readable acts on what the client sent: each complete line, until the
// socket has no more. It runs on the input poller's goroutine (one for all
// clients), or on the writer's when a write found the peer gone, and never
// blocks.
func (c *client) readable() {
	c.inMu.Lock()
	defer c.inMu.Unlock()
	for {
		line, err := c.in.next()
		switch {
		case errors.Is(err, errNoLine):
			return
		case errors.Is(err, errLineTooLong):
			c.fail(stepdown.CodeLineTooLong, CauseLineTooLong, fmt.Sprintf("line longer than %d bytes", stepdown.MaxLineBytes))
			return
		case err != nil:
			c.s.drop(c, CauseClientClosed)
			return
		}
		now := time.Now()
		c.tokens = min(floodBurst, c.tokens+now.Sub(c.last).Seconds()*floodRate)
		c.last = now
		if c.tokens < 1 {
			c.fail(stepdown.CodeFlood, CauseFlood, fmt.Sprintf("more than %d messages per second", floodRate))
			return
		}
		c.tokens--
		if len(bytes.TrimSpace(line)) == 0 {
			continue
		}
		if !c.handle(line) {
			return
		}
	}
}

// handle acts on one line from the client; it reports false when it cut
// the client off.
func (c *client) handle(line []byte) bool {
	m, err := stepdown.ParseMessage(line)
	if err == nil {
		err = checkKeys(line, c.s.keys)
	}
	if err != nil {
		c.fail(stepdown.CodeGarbage, CauseGarbage, err.Error())
		return false
	}
	switch m.Type {
	case stepdown.TypeAck:
		c.s.ack(c, m.Seq)
	case stepdown.TypeDrill:
		c.s.drillFrom(c, m)
	case stepdown.TypeWatchPeer:
		c.s.watchPeer(c, m)
	default:
		c.sendError(stepdown.CodeUnknownType, fmt.Sprintf("clients may send ack, drill or watch_peer, not %q", m.Type))
	}
	return true
}
