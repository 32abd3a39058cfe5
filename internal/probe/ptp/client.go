package ptp

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"strconv"
	"syscall"
	"time"

	"github.com/facebook/time/ptp/protocol"
)

// Conn is what the client needs of its socket; *net.UnixConn fits.
type Conn interface {
	io.ReadWriter
	SetDeadline(t time.Time) error
	Close() error
}

// Dialer opens a datagram connection to ptp4l's socket at path.
type Dialer interface {
	Dial(ctx context.Context, path string) (Conn, error)
}

// Client reads ptp4l over its management socket. Not safe for concurrent
// use.
type Client struct {
	path    string
	domain  uint8
	timeout time.Duration
	dial    Dialer

	conn Conn
	seq  uint16
	pid  uint16
	buf  [1500]byte
}

// NewClient returns a client for ptp4l's socket at path. It dials lazily.
// replyDir is where the reply socket is bound; empty means an abstract
// socket.
func NewClient(path string, domain int, replyDir string, timeout time.Duration) *Client {
	return &Client{path: path, domain: uint8(domain), timeout: timeout, dial: newUnixDialer(replyDir),
		pid: uint16(os.Getpid()), seq: uint16(time.Now().UnixNano())}
}

// Close closes the connection (removing a reply socket file).
func (c *Client) Close() error {
	if c.conn == nil {
		return nil
	}
	err := c.conn.Close()
	c.conn = nil
	return err
}

// Poll reads the data sets ptp4l keeps.
func (c *Client) Poll(ctx context.Context) (Data, error) {
	if c.conn == nil {
		conn, err := c.dial.Dial(ctx, c.path)
		if err != nil {
			return Data{}, err
		}
		c.conn = conn
	}
	d, err := c.poll(ctx)
	if err != nil {
		c.Close()
		return Data{}, err
	}
	// A deadline left set arms a runtime timer that would wake the
	// process when it passes, long after the poll.
	_ = c.conn.SetDeadline(time.Time{})
	return d, nil
}

func (c *Client) poll(ctx context.Context) (Data, error) {
	var d Data
	dds, err := get[*protocol.DefaultDataSetTLV](ctx, c, protocol.IDDefaultDataSet, "DEFAULT_DATA_SET")
	if err != nil {
		return d, err
	}
	d.ClockIdentity = dds.ClockIdentity.String()
	d.ClockClass = uint8(dds.ClockQuality.ClockClass)
	d.ClockAccuracy = uint8(dds.ClockQuality.ClockAccuracy)
	d.SlaveOnly = dds.SoTSC&0x02 != 0
	d.Domain = int(dds.DomainNumber)

	cds, err := get[*protocol.CurrentDataSetTLV](ctx, c, protocol.IDCurrentDataSet, "CURRENT_DATA_SET")
	if err != nil {
		return d, err
	}
	d.StepsRemoved = int(cds.StepsRemoved)
	d.OffsetFromMaster = nanoseconds(cds.OffsetFromMaster.Nanoseconds())
	d.MeanPathDelay = nanoseconds(cds.MeanPathDelay.Nanoseconds())

	pds, err := get[*protocol.ParentDataSetTLV](ctx, c, protocol.IDParentDataSet, "PARENT_DATA_SET")
	if err != nil {
		return d, err
	}
	d.ParentPort = pds.ParentPortIdentity.ClockIdentity.String() + "-" + strconv.Itoa(int(pds.ParentPortIdentity.PortNumber))
	d.GrandmasterIdentity = pds.GrandmasterIdentity.String()
	d.GrandmasterClockClass = uint8(pds.GrandmasterClockQuality.ClockClass)
	d.GrandmasterClockAccuracy = uint8(pds.GrandmasterClockQuality.ClockAccuracy)
	d.GrandmasterPriority1, d.GrandmasterPriority2 = pds.GrandmasterPriority1, pds.GrandmasterPriority2

	tsn, err := get[*protocol.TimeStatusNPTLV](ctx, c, protocol.IDTimeStatusNP, "TIME_STATUS_NP")
	if err != nil {
		return d, err
	}
	d.GrandmasterPresent = tsn.GMPresent != 0
	d.MasterOffset = time.Duration(tsn.MasterOffsetNS)

	raw, err := c.exchange(ctx, protocol.IDTimePropertiesDataSet, "TIME_PROPERTIES_DATA_SET", 1, nil)
	if err != nil {
		return d, err
	}
	if d.Time, err = decodeTimeProperties(raw); err != nil {
		return d, fmt.Errorf("decoding ptp4l's TIME_PROPERTIES_DATA_SET: %w", err)
	}

	// One reply per port, in the order ptp4l sends them (port order).
	ports := max(1, int(dds.NumberPorts))
	_, err = c.exchange(ctx, protocol.IDPortPropertiesNP, "PORT_PROPERTIES_NP", ports, func(b []byte) error {
		pp, err := decode[*protocol.PortPropertiesNPTLV](b)
		if err != nil {
			return err
		}
		d.Ports = append(d.Ports, Port{Number: int(pp.PortIdentity.PortNumber), Interface: string(pp.Interface),
			State: pp.PortState, Timestamping: timestamping(pp.Timestamping)})
		return nil
	})
	if err != nil {
		return d, err
	}
	return d, nil
}

// nanoseconds converts a float count of nanoseconds, saturating.
func nanoseconds(ns float64) time.Duration {
	switch {
	case ns >= float64(1<<63-1):
		return 1<<63 - 1
	case ns <= -float64(1<<63):
		return -1 << 63
	}
	return time.Duration(ns)
}

func timestamping(t protocol.Timestamping) string {
	switch t {
	case protocol.TimestampingSoftware:
		return "SOFTWARE"
	case protocol.TimestampingHardware:
		return "HARDWARE"
	case protocol.TimestampingLegacyHW:
		return "LEGACY_HW"
	case protocol.TimestampingOneStep:
		return "ONESTEP"
	case protocol.TimestampingP2P1Step:
		return "P2P1STEP"
	}
	return "UNKNOWN_" + strconv.Itoa(int(t))
}

func (c *Client) explain(what string, err error) error {
	var ne interface{ Timeout() bool }
	switch {
	case errors.As(err, &ne) && ne.Timeout() && c.abstract():
		// The other silent failure: ptp4l in another network namespace (a
		// pod without hostNetwork, a container) cannot reach an abstract
		// reply socket, and its answers are lost without an error.
		return fmt.Errorf("ptp4l did not answer %s within %s on %s: is ptp.domain (%d) ptp4l's domainNumber? ptp4l ignores other domains silently. "+
			"Or ptp4l runs in another network namespace (a container or a pod without hostNetwork): clockwatch's reply socket is abstract "+
			"(ptp.reply_socket_dir is empty) and abstract sockets do not cross network namespaces, so ptp4l's answers never arrive; "+
			"set ptp.reply_socket_dir to a directory ptp4l can write to, at the same path in both mount namespaces (in Kubernetes, /run/clockwatch): %w",
			what, c.timeout, c.path, c.domain, err)
	case errors.As(err, &ne) && ne.Timeout():
		return fmt.Errorf("ptp4l did not answer %s within %s on %s: is ptp.domain (%d) ptp4l's domainNumber? ptp4l ignores other domains silently: %w", what, c.timeout, c.path, c.domain, err)
	case errors.Is(err, syscall.ECONNREFUSED):
		return fmt.Errorf("nothing listens on %s: ptp4l is not running (the socket is left from an earlier run): %w", c.path, err)
	}
	return fmt.Errorf("reading %s from ptp4l at %s: %w", what, c.path, err)
}

// abstract reports whether the reply socket is abstract (the real dialer
// without a directory).
func (c *Client) abstract() bool {
	u, ok := c.dial.(*unixDialer)
	return ok && u.dir == ""
}
