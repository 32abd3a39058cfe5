package chrony

import (
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"time"
)

// Conn is what the client needs of a connection to chronyd: one datagram
// per Write and per Read. *net.UnixConn and *net.UDPConn fit; tests use a
// connection that replays captured replies.
type Conn interface {
	io.ReadWriter
	SetDeadline(t time.Time) error
	Close() error
}

// Sizes and offsets in chrony's command packets (candm.h).
const (
	requestHeadLen = 20
	replyHeadLen   = 28
	pktTypeReply   = 2
	// maxStaleReplies bounds how many out-of-sequence replies one read skips.
	maxStaleReplies = 16
)

// checkedConn wraps a Conn so that every reply is checked against the
// request it answers: a reply with an older sequence number (a late answer
// to an earlier request that timed out) is dropped and the read goes on
// until the deadline; a reply that is too short, is not a reply, or answers
// another command is an error. It remembers the status of the last reply so
// that the client can explain a refusal.
//
// Requests may be sent ahead (sendAhead): chronyd answers its datagrams in
// the order they came, so a poll that sends a window of requests before
// reading the first reply waits for chronyd once per window instead of once
// per request. The library then writes each of them again, in the same
// order; Write recognises them and sends nothing.
type checkedConn struct {
	Conn
	wantSeq    uint32
	wantCmd    uint16
	lastStatus uint16
	stale      int
	// ahead are the requests sent ahead and not yet written by the library,
	// oldest first.
	ahead []sentRequest
	// buf holds the padded request.
	buf []byte
}

// sentRequest is a request's identity: its sequence number and command.
type sentRequest struct {
	seq uint32
	cmd uint16
}

func requestHead(p []byte) sentRequest {
	return sentRequest{seq: binary.BigEndian.Uint32(p[8:12]), cmd: binary.BigEndian.Uint16(p[4:6])}
}

// sendAhead sends encoded requests now, each padded as Write pads it.
func (c *checkedConn) sendAhead(reqs [][]byte) error {
	for _, p := range reqs {
		if len(p) < requestHeadLen {
			return fmt.Errorf("request of %d bytes is shorter than chrony's %d-byte header", len(p), requestHeadLen)
		}
		if err := c.send(p); err != nil {
			c.ahead = c.ahead[:0]
			return err
		}
		c.ahead = append(c.ahead, requestHead(p))
	}
	return nil
}

// Write records the sequence number and command of the request and sends
// it, unless it was sent ahead.
func (c *checkedConn) Write(p []byte) (int, error) {
	if len(p) < requestHeadLen {
		return 0, fmt.Errorf("request of %d bytes is shorter than chrony's %d-byte header", len(p), requestHeadLen)
	}
	h := requestHead(p)
	c.wantCmd, c.wantSeq = h.cmd, h.seq
	c.lastStatus = 0
	if len(c.ahead) > 0 {
		if c.ahead[0] != h {
			// The client asked for something else than it sent ahead: a
			// mistake of the client, not of chronyd.
			return 0, fmt.Errorf("request %d (command %d) written while request %d (command %d) was sent ahead", h.seq, h.cmd, c.ahead[0].seq, c.ahead[0].cmd)
		}
		c.ahead = c.ahead[1:]
		return len(p), nil
	}
	if err := c.send(p); err != nil {
		return 0, err
	}
	return len(p), nil
}

// send writes one request, padded to the length chronyd requires.
func (c *checkedConn) send(p []byte) error {
	n := requestLen(binary.BigEndian.Uint16(p[4:6]))
	if len(p) >= n {
		_, err := c.Conn.Write(p)
		return err
	}
	if cap(c.buf) < n {
		c.buf = make([]byte, 512)
	}
	c.buf = c.buf[:n]
	copy(c.buf, p)
	clear(c.buf[len(p):])
	_, err := c.Conn.Write(c.buf)
	return err
}

// errShortReply and friends are the ways a reply can be malformed.
var (
	errShortReply = errors.New("reply shorter than chrony's 28-byte header")
	errNotReply   = errors.New("packet is not a chrony command reply")
	// errReplyLost: a reply to a later request came first. chronyd answers
	// in order, so the reply waited for was dropped (chronyd found the
	// reply socket's queue full).
	errReplyLost = errors.New("chronyd's reply was lost")
)

// Read returns the next reply that matches the last request.
func (c *checkedConn) Read(p []byte) (int, error) {
	for skipped := 0; ; skipped++ {
		n, err := c.Conn.Read(p)
		if err != nil {
			return n, err
		}
		if n < replyHeadLen {
			return 0, fmt.Errorf("%w: got %d bytes", errShortReply, n)
		}
		if p[1] != pktTypeReply {
			return 0, fmt.Errorf("%w: packet type %d", errNotReply, p[1])
		}
		if seq := binary.BigEndian.Uint32(p[16:20]); seq != c.wantSeq {
			if int32(seq-c.wantSeq) > 0 {
				return 0, fmt.Errorf("%w: the reply to request %d came before the one to request %d", errReplyLost, seq, c.wantSeq)
			}
			// A late reply to an earlier request: skip it, but not forever.
			c.stale++
			if skipped == maxStaleReplies {
				return 0, fmt.Errorf("%d replies in a row with a wrong sequence number (want %d, got %d)", maxStaleReplies, c.wantSeq, seq)
			}
			continue
		}
		if cmd := binary.BigEndian.Uint16(p[4:6]); cmd != c.wantCmd {
			return 0, fmt.Errorf("reply to command %d received for command %d", cmd, c.wantCmd)
		}
		c.lastStatus = binary.BigEndian.Uint16(p[8:10])
		return n, nil
	}
}
