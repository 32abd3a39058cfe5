package server

import (
	"bufio"
	"bytes"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"sync"
	"sync/atomic"
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

// client is one subscriber.
type client struct {
	s       *Server
	conn    *net.UnixConn
	cred    Cred
	credErr error
	queue   chan []byte // nil entry: close after what came before
	done    chan struct{}
	once    sync.Once
	lastAck uint64 // read loop only
	// peerWatches counts the watch_peer requests served (read loop only).
	peerWatches int
	// helloSeq is the seq of the hello: events after it were sent to this
	// connection, and only their acks measure the ack latency.
	helloSeq uint64

	closeCause string // set before a nil entry is queued

	// wmu is held while writing to conn. queued counts messages queued
	// and not yet written: only when it is zero may a broadcast write
	// directly, so that messages never overtake each other.
	wmu    sync.Mutex
	queued atomic.Int32
	raw    syscall.RawConn

	// direct is the message of the fast path and directN what was
	// written; directWrite, made once, writes it (a closure per message
	// would be an allocation per subscriber per event). Guarded by wmu.
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

// send delivers b, or queues it for the writer goroutine; it never blocks.
// It reports false when the queue is full.
func (c *client) send(b []byte) bool {
	if c.raw != nil && c.wmu.TryLock() {
		if c.queued.Load() == 0 {
			// Fast path: a non-blocking write straight from the broadcast
			// saves waking the writer goroutine.
			c.direct, c.directN = b, 0
			c.raw.Control(c.directWrite)
			n := c.directN
			c.direct = nil
			if n == len(b) {
				c.wmu.Unlock()
				return true
			}
			b = b[n:]
		}
		c.wmu.Unlock()
	}
	return c.enqueue(b)
}

func (c *client) enqueue(b []byte) bool {
	c.queued.Add(1)
	select {
	case c.queue <- b:
		return true
	default:
		c.queued.Add(-1)
		return false
	}
}

func (c *client) shutdown(cause string) {
	c.once.Do(func() {
		close(c.done)
		c.conn.Close()
		c.s.met.disconnects.WithLabelValues(cause).Inc()
		// Debug: any member of the socket's group can connect and
		// disconnect in a loop (the metrics count every disconnect).
		c.s.log.Debug("stepdown client disconnected", "pid", c.cred.PID, "uid", c.cred.UID, "cause", cause)
	})
}

// sendError queues an error message for this client only.
func (c *client) sendError(code, msg string) {
	b := stepdown.Message{Type: stepdown.TypeError, Code: code, Error: msg}.AppendLine(nil)
	c.s.met.clientErrors.WithLabelValues(code).Inc()
	if c.enqueue(b) {
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
	c.closeCause = cause
	b := stepdown.Message{Type: stepdown.TypeError, Code: code, Error: msg}.AppendLine(nil)
	c.s.met.clientErrors.WithLabelValues(code).Inc()
	if c.enqueue(b) && c.enqueue(nil) {
		return
	}
	c.shutdown(cause)
}

func (c *client) writeLoop() {
	defer c.s.wg.Done()
	var buf []byte
	for {
		var first []byte
		select {
		case first = <-c.queue:
		case <-c.done:
			return
		}
		buf = append(buf[:0], first...)
		taken := int32(1)
		closing := first == nil
	batch:
		for i := 0; i < writeBatch && !closing; i++ {
			select {
			case b := <-c.queue:
				taken++
				closing = b == nil
				buf = append(buf, b...)
			default:
				break batch
			}
		}
		if len(buf) > 0 {
			c.wmu.Lock()
			c.conn.SetWriteDeadline(time.Now().Add(c.s.cfg.WriteTimeout))
			_, err := c.conn.Write(buf)
			// Cleared, the deadline's timer does not wake the daemon
			// WriteTimeout after every message.
			c.conn.SetWriteDeadline(time.Time{})
			c.queued.Add(-taken)
			c.wmu.Unlock()
			if err != nil {
				c.s.drop(c, CauseWriteError)
				return
			}
		} else {
			c.queued.Add(-taken)
		}
		if closing {
			c.shutdown(c.closeCause)
			return
		}
	}
}

func (c *client) readLoop() {
	defer c.s.wg.Done()
	br := bufio.NewReaderSize(c.conn, stepdown.MaxLineBytes)
	tokens := float64(floodBurst)
	last := time.Now()
	for {
		line, err := br.ReadSlice('\n')
		if errors.Is(err, bufio.ErrBufferFull) {
			c.fail(stepdown.CodeLineTooLong, CauseLineTooLong, fmt.Sprintf("line longer than %d bytes", stepdown.MaxLineBytes))
			return
		}
		if err != nil {
			c.s.drop(c, CauseClientClosed)
			return
		}
		now := time.Now()
		tokens = min(floodBurst, tokens+now.Sub(last).Seconds()*floodRate)
		last = now
		if tokens < 1 {
			c.fail(stepdown.CodeFlood, CauseFlood, fmt.Sprintf("more than %d messages per second", floodRate))
			return
		}
		tokens--
		if len(bytes.TrimSpace(line)) == 0 {
			continue
		}
		m, err := stepdown.ParseMessage(line)
		if err == nil {
			err = checkKeys(line, c.s.keys)
		}
		if err != nil {
			c.fail(stepdown.CodeGarbage, CauseGarbage, err.Error())
			return
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
	}
}
