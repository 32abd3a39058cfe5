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
// request just written: a reply with another sequence number (a late answer
// to an earlier request that timed out) is dropped and the read goes on
// until the deadline; a reply that is too short, is not a reply, or answers
// another command is an error. It remembers the status of the last reply so
// that the client can explain a refusal.
type checkedConn struct {
	Conn
	wantSeq    uint32
	wantCmd    uint16
	lastStatus uint16
	stale      int
	// buf holds the padded request.
	buf []byte
}

// Write records the sequence number and command of the request.
func (c *checkedConn) Write(p []byte) (int, error) {
	if len(p) < requestHeadLen {
		return 0, fmt.Errorf("request of %d bytes is shorter than chrony's %d-byte header", len(p), requestHeadLen)
	}
	c.wantCmd = binary.BigEndian.Uint16(p[4:6])
	c.wantSeq = binary.BigEndian.Uint32(p[8:12])
	c.lastStatus = 0
	if n := requestLen(c.wantCmd); len(p) < n {
		if cap(c.buf) < n {
			c.buf = make([]byte, 512)
		}
		c.buf = c.buf[:n]
		copy(c.buf, p)
		clear(c.buf[len(p):])
		if _, err := c.Conn.Write(c.buf); err != nil {
			return 0, err
		}
		return len(p), nil
	}
	return c.Conn.Write(p)
}

// errShortReply and friends are the ways a reply can be malformed.
var (
	errShortReply = errors.New("reply shorter than chrony's 28-byte header")
	errNotReply   = errors.New("packet is not a chrony command reply")
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
