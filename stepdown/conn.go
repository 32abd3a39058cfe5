package stepdown

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"net"
	"strings"
	"sync"
	"time"
)

// DefaultSocket is where clockwatch listens unless configured otherwise.
const DefaultSocket = "/run/clockwatch/stepdown.sock"

// ReservedPath is the reserved socket beside the stepdown socket at path:
// "stepdown.sock" becomes "stepdown.reserved.sock" (".reserved" is appended
// to a path that does not end in ".sock"). clockwatch listens there for root
// and its own uid (and stepdown.reserved_group) only: the file's permissions
// keep every other uid out of its accept queue, so a connection flood on
// the stepdown socket cannot delay their connections.
func ReservedPath(path string) string {
	if base, ok := strings.CutSuffix(path, ".sock"); ok {
		return base + ".reserved.sock"
	}
	return path + ".reserved"
}

// Conn is one connection to the stepdown socket: the raw message stream.
// Most applications want Subscribe instead, which reconnects and tracks the
// state.
type Conn struct {
	c   net.Conn
	br  *bufio.Reader
	wmu sync.Mutex
}

// Dial connects to the stepdown socket at path (DefaultSocket if empty). It
// tries the reserved socket beside it first (ReservedPath), which only root
// and clockwatch's own uid may use unless configured otherwise, and takes
// path when that fails for any reason: absent (an older clockwatch, or
// stepdown.reserved_socket: none), not permitted (every other uid), not
// served (clockwatch restarting while systemd holds the stepdown socket) or
// full. A failure names path, never the reserved socket.
func Dial(ctx context.Context, path string) (*Conn, error) {
	if path == "" {
		path = DefaultSocket
	}
	var d net.Dialer
	if c, err := d.DialContext(ctx, "unix", ReservedPath(path)); err == nil {
		return NewConn(c), nil
	}
	c, err := d.DialContext(ctx, "unix", path)
	if err != nil {
		return nil, fmt.Errorf("connecting to the clockwatch stepdown socket: %w", err)
	}
	return NewConn(c), nil
}

// NewConn wraps an established connection, for callers that dial themselves.
func NewConn(c net.Conn) *Conn { return &Conn{c: c, br: bufio.NewReaderSize(c, MaxLineBytes)} }

// Read returns the next message. Set a deadline with SetReadDeadline to
// notice a silent server.
func (c *Conn) Read() (Message, error) {
	line, err := c.br.ReadSlice('\n')
	if errors.Is(err, bufio.ErrBufferFull) {
		return Message{}, fmt.Errorf("%w: line longer than %d bytes", ErrGarbage, MaxLineBytes)
	}
	if err != nil {
		return Message{}, fmt.Errorf("reading from the stepdown socket: %w", err)
	}
	return ParseMessage(line)
}

// SetReadDeadline sets the deadline of Read.
func (c *Conn) SetReadDeadline(t time.Time) error { return c.c.SetReadDeadline(t) }

// Send writes one message. It is safe to call while another goroutine reads.
func (c *Conn) Send(m Message) error {
	c.wmu.Lock()
	defer c.wmu.Unlock()
	c.c.SetWriteDeadline(time.Now().Add(5 * time.Second))
	if _, err := c.c.Write(m.AppendLine(nil)); err != nil {
		return fmt.Errorf("writing to the stepdown socket: %w", err)
	}
	return nil
}

// Ack tells clockwatch the event with this seq has been acted upon.
func (c *Conn) Ack(seq uint64) error { return c.Send(Message{Type: TypeAck, Seq: seq}) }

// WatchPeer asks to follow the clock of peer (another node's clockwatch
// this one measures): peer messages follow, at once and at every change.
func (c *Conn) WatchPeer(peer string) error { return c.Send(Message{Type: TypeWatchPeer, Peer: peer}) }

// Close closes the connection.
func (c *Conn) Close() error { return c.c.Close() }
