package ptp

import (
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"math/rand/v2"
	"net"
	"os"
	"path/filepath"
	"strconv"
	"sync/atomic"
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

// Port is one PTP port of the clock (PORT_PROPERTIES_NP).
type Port struct {
	// Number is the port number (1-based).
	Number int
	// Interface is the network interface the port runs on.
	Interface string
	// State is the port state: INITIALIZING, FAULTY, DISABLED, LISTENING,
	// PRE_MASTER, MASTER, PASSIVE, UNCALIBRATED, SLAVE (or GRAND_MASTER).
	State protocol.PortState
	// Timestamping is SOFTWARE, HARDWARE, LEGACY_HW, ONESTEP or P2P1STEP.
	Timestamping string
}

// TimeProperties is the TIME_PROPERTIES_DATA_SET: what the grandmaster
// says of its time.
type TimeProperties struct {
	// CurrentUTCOffset is TAI − UTC in seconds, meaningful when
	// UTCOffsetValid.
	CurrentUTCOffset int
	// Leap61 and Leap59 announce a positive or negative leap second at the
	// end of the current UTC day.
	Leap61, Leap59 bool
	UTCOffsetValid bool
	// PTPTimescale is true for the PTP (TAI) timescale, false for ARB.
	PTPTimescale bool
	// TimeTraceable and FrequencyTraceable say the grandmaster's time and
	// frequency are traceable to a primary reference.
	TimeTraceable, FrequencyTraceable bool
	// TimeSource is the grandmaster's source: 0x20 GNSS, 0xa0 internal
	// oscillator, ...
	TimeSource uint8
}

// Data is one reading of ptp4l.
type Data struct {
	// ClockIdentity is this clock's identity (DEFAULT_DATA_SET), as pmc
	// prints it (001122.fffe.334455).
	ClockIdentity string
	// ClockClass and ClockAccuracy are this clock's own quality; SlaveOnly
	// its configuration.
	ClockClass    uint8
	ClockAccuracy uint8
	SlaveOnly     bool
	// Domain is ptp4l's domainNumber.
	Domain int
	// Ports are the clock's ports, by number.
	Ports []Port
	// StepsRemoved, OffsetFromMaster and MeanPathDelay are the
	// CURRENT_DATA_SET: the offset is this clock minus the master's
	// (positive: this clock is ahead), the delay is the one-way mean (half
	// the round trip).
	StepsRemoved     int
	OffsetFromMaster time.Duration
	MeanPathDelay    time.Duration
	// ParentPort is the master port this clock follows (PARENT_DATA_SET);
	// its own identity when it has no master.
	ParentPort string
	// GrandmasterIdentity and the grandmaster's announced quality.
	GrandmasterIdentity      string
	GrandmasterClockClass    uint8
	GrandmasterClockAccuracy uint8
	GrandmasterPriority1     uint8
	GrandmasterPriority2     uint8
	// GrandmasterPresent is TIME_STATUS_NP's gmPresent: another clock is
	// the grandmaster (false when this clock is, or it has none).
	GrandmasterPresent bool
	// MasterOffset is TIME_STATUS_NP's master_offset: the servo's last
	// measured offset, updated even while the port is UNCALIBRATED.
	MasterOffset time.Duration
	// Time is the TIME_PROPERTIES_DATA_SET.
	Time TimeProperties
}

// Grandmaster reports whether this clock is the grandmaster of its domain.
func (d Data) Grandmaster() bool {
	return d.GrandmasterIdentity != "" && d.GrandmasterIdentity == d.ClockIdentity
}

// SoftwareTimestamping reports whether every port uses software
// timestamps: then ptp4l's offset is the system clock's.
func (d Data) SoftwareTimestamping() bool {
	for _, p := range d.Ports {
		if p.Timestamping != "SOFTWARE" {
			return false
		}
	}
	return len(d.Ports) > 0
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

// get sends a GET for one management ID and decodes the single reply.
func get[T protocol.ManagementTLV](ctx context.Context, c *Client, id protocol.ManagementID, name string) (T, error) {
	var out T
	_, err := c.exchange(ctx, id, name, 1, func(b []byte) error {
		var err error
		out, err = decode[T](b)
		return err
	})
	return out, err
}

func decode[T protocol.ManagementTLV](b []byte) (T, error) {
	var zero T
	p, err := protocol.DecodePacket(b)
	if err != nil {
		return zero, err
	}
	m, ok := p.(*protocol.Management)
	if !ok {
		return zero, fmt.Errorf("got a %T, not a management message", p)
	}
	tlv, ok := m.TLV.(T)
	if !ok {
		return zero, fmt.Errorf("got a %T, want %T", m.TLV, zero)
	}
	return tlv, nil
}

// Offsets in a management message (IEEE 1588-2019 tables 35, 56, 58, 109).
const (
	offSequence = 30 // header sequenceId
	offAction   = 46 // actionField (low nibble)
	offTLVType  = 48
	offTLVLen   = 50
	offMgmtID   = 52 // managementId, or managementErrorId in an error TLV
	offData     = 54 // dataField, or managementId in an error TLV
	tlvError    = 0x0002
)

// exchange sends one GET and reads n replies with its sequence number,
// handing each to each (when not nil); it returns the last reply's bytes.
// Replies to earlier requests (a previous poll that timed out) are skipped.
func (c *Client) exchange(ctx context.Context, id protocol.ManagementID, name string, n int, each func([]byte) error) ([]byte, error) {
	deadline := time.Now().Add(c.timeout)
	if d, ok := ctx.Deadline(); ok && d.Before(deadline) {
		deadline = d
	}
	if err := c.conn.SetDeadline(deadline); err != nil {
		return nil, fmt.Errorf("setting a deadline on the socket to ptp4l: %w", err)
	}
	c.seq++
	req, err := request(id, c.seq, c.domain, c.pid)
	if err != nil {
		return nil, fmt.Errorf("encoding the %s request: %w", name, err)
	}
	if _, err := c.conn.Write(req); err != nil {
		return nil, c.explain(name, err)
	}
	var last []byte
	for got, skipped := 0, 0; got < n; {
		m, err := c.conn.Read(c.buf[:])
		if err != nil {
			return nil, c.explain(name, err)
		}
		b := c.buf[:m]
		if m < offData || b[0]&0x0f != byte(protocol.MessageManagement) {
			return nil, fmt.Errorf("ptp4l at %s answered %s with %d bytes that are not a management message", c.path, name, m)
		}
		if binary.BigEndian.Uint16(b[offSequence:]) != c.seq || b[offAction]&0x0f != byte(protocol.RESPONSE) {
			if skipped++; skipped == 16 {
				return nil, fmt.Errorf("ptp4l at %s: 16 replies in a row that do not answer the %s request", c.path, name)
			}
			continue
		}
		got++
		if tlv := binary.BigEndian.Uint16(b[offTLVType:]); tlv == tlvError {
			e := protocol.ManagementErrorID(binary.BigEndian.Uint16(b[offMgmtID:]))
			return nil, fmt.Errorf("ptp4l at %s refused %s: %s", c.path, name, e)
		} else if tlv != uint16(protocol.TLVManagement) {
			return nil, fmt.Errorf("ptp4l at %s answered %s with TLV type %#04x", c.path, name, tlv)
		}
		if got := protocol.ManagementID(binary.BigEndian.Uint16(b[offMgmtID:])); got != id {
			return nil, fmt.Errorf("ptp4l at %s answered %s with management ID %#04x", c.path, name, uint16(got))
		}
		if each != nil {
			if err := each(b); err != nil {
				return nil, fmt.Errorf("decoding ptp4l's %s: %w", name, err)
			}
		}
		last = b
	}
	return last, nil
}

// request encodes a GET of id with an empty data field, as pmc sends it.
func request(id protocol.ManagementID, seq uint16, domain uint8, pid uint16) ([]byte, error) {
	m := &protocol.Management{
		ManagementMsgHead: protocol.ManagementMsgHead{
			Header: protocol.Header{
				SdoIDAndMsgType:    protocol.NewSdoIDAndMsgType(protocol.MessageManagement, 0),
				Version:            protocol.Version,
				MessageLength:      uint16(binary.Size(protocol.ManagementMsgHead{}) + binary.Size(protocol.TLVHead{}) + 2),
				DomainNumber:       domain,
				SequenceID:         seq,
				SourcePortIdentity: protocol.PortIdentity{PortNumber: pid},
				LogMessageInterval: protocol.MgmtLogMessageInterval,
			},
			TargetPortIdentity: protocol.DefaultTargetPortIdentity,
			ActionField:        protocol.GET,
		},
		TLV: &protocol.ManagementTLVHead{
			TLVHead:      protocol.TLVHead{TLVType: protocol.TLVManagement, LengthField: 2},
			ManagementID: id,
		},
	}
	return m.MarshalBinary()
}

// decodeTimeProperties reads a TIME_PROPERTIES_DATA_SET reply (IEEE
// 1588-2019 15.5.3.6.1): currentUtcOffset, the flags octet, timeSource.
func decodeTimeProperties(b []byte) (TimeProperties, error) {
	if int(binary.BigEndian.Uint16(b[offTLVLen:])) < 2+4 || len(b) < offData+4 {
		return TimeProperties{}, fmt.Errorf("%d bytes, too short", len(b))
	}
	f := b[offData+2]
	return TimeProperties{
		CurrentUTCOffset:   int(int16(binary.BigEndian.Uint16(b[offData:]))),
		Leap61:             f&0x01 != 0,
		Leap59:             f&0x02 != 0,
		UTCOffsetValid:     f&0x04 != 0,
		PTPTimescale:       f&0x08 != 0,
		TimeTraceable:      f&0x10 != 0,
		FrequencyTraceable: f&0x20 != 0,
		TimeSource:         b[offData+3],
	}, nil
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

// unixDialer is the real Dialer: a unix datagram socket bound to an
// abstract name, or to a file in dir, connected to ptp4l's socket.
type unixDialer struct {
	dir     string
	counter atomic.Uint64
}

var _ Dialer = (*unixDialer)(nil)

// newUnixDialer starts the dialer's counter at a random point: two clients
// in one process (a reload, a test) would otherwise bind the same abstract
// name, PID.1, and the second would fail with "address already in use".
func newUnixDialer(dir string) *unixDialer {
	u := &unixDialer{dir: dir}
	u.counter.Store(uint64(rand.Uint32()) << 16)
	return u
}

// Dial implements Dialer.
func (u *unixDialer) Dial(_ context.Context, path string) (Conn, error) {
	n := u.counter.Add(1)
	name := fmt.Sprintf("clockwatch-ptp4l.%d.%d", os.Getpid(), n)
	local := "@" + name // abstract: no file to remove, no permission to grant
	if u.dir != "" {
		local = filepath.Join(u.dir, name+".sock")
		_ = os.Remove(local) // left by a process that had this PID
	}
	conn, err := net.DialUnix("unixgram", &net.UnixAddr{Name: local, Net: "unixgram"}, &net.UnixAddr{Name: path, Net: "unixgram"})
	if err != nil {
		if u.dir != "" {
			os.Remove(local)
		}
		return nil, explainDial(path, local, err)
	}
	if u.dir == "" {
		return conn, nil
	}
	// ptp4l may run under another user than clockwatch: let it reply. A
	// stranger's datagram is dropped by the sequence check.
	if err := os.Chmod(local, 0o666); err != nil {
		conn.Close()
		os.Remove(local)
		return nil, fmt.Errorf("making the reply socket %s writable for ptp4l: %w", local, err)
	}
	return &fileConn{UnixConn: conn, path: local}, nil
}

func explainDial(path, local string, err error) error {
	switch {
	case errors.Is(err, os.ErrNotExist):
		return fmt.Errorf("ptp4l's socket %s does not exist: ptp4l is not running, or its uds_address is elsewhere (set ptp.address): %w", path, err)
	case errors.Is(err, os.ErrPermission):
		return fmt.Errorf("no permission to write to ptp4l's socket %s (or to bind %s): run clockwatch in the socket's group (linuxptp 3.1 creates it 0660 with ptp4l's group): %w", path, local, err)
	case errors.Is(err, syscall.ECONNREFUSED):
		return fmt.Errorf("nothing listens on %s: ptp4l is not running (the socket is left from an earlier run): %w", path, err)
	}
	return fmt.Errorf("connecting to ptp4l's socket %s: %w", path, err)
}

// fileConn removes its reply socket file when closed.
type fileConn struct {
	*net.UnixConn
	path string
}

func (f *fileConn) Close() error {
	err := f.UnixConn.Close()
	if rerr := os.Remove(f.path); rerr != nil && !errors.Is(rerr, os.ErrNotExist) && err == nil {
		err = rerr
	}
	return err
}
