package ntpd

import (
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"math"
	"net"
	"sort"
	"strconv"
	"strings"
	"syscall"
	"time"

	"github.com/facebook/time/ntp/control"
)

// Conn is what the client needs of its UDP socket; *net.UDPConn fits.
type Conn interface {
	io.ReadWriter
	SetDeadline(t time.Time) error
	Close() error
}

// Dialer opens a connection to ntpd.
type Dialer func(ctx context.Context, address string) (Conn, error)

func dialUDP(ctx context.Context, address string) (Conn, error) {
	var d net.Dialer
	c, err := d.DialContext(ctx, "udp", address)
	if err != nil {
		return nil, err
	}
	return c.(*net.UDPConn), nil
}

// System is ntpd's system variables (`ntpq -c rv`).
type System struct {
	Version string
	// Leap is the leap indicator: 0 none, 1 insert, 2 delete, 3 not
	// synchronised.
	Leap    int
	Stratum int
	RefID   string
	// Offset is the local clock minus true time, seconds (ntpd's offset
	// negated: ntpd reports the reference minus the local clock).
	Offset float64
	// SysJitter and ClockJitter are ntpd's jitters; ClockWander is the
	// frequency wander as a ratio.
	SysJitter, ClockJitter, ClockWander float64
	// Frequency is the frequency correction, as a ratio.
	Frequency float64
	// RootDelay and RootDispersion, seconds.
	RootDelay, RootDispersion float64
}

// Synchronised reports whether ntpd is synchronised.
func (s System) Synchronised() bool { return s.Leap != 3 && s.Stratum > 0 && s.Stratum < 16 }

// ErrorBound is |offset| + root dispersion + root delay / 2, as for chrony.
func (s System) ErrorBound() float64 { return math.Abs(s.Offset) + s.RootDispersion + s.RootDelay/2 }

// Peer is one association (`ntpq -c peers`).
type Peer struct {
	AssociationID uint16
	Address       string
	RefID         string
	// Selection is the peer status word's selection: reject, falsetick,
	// excess, outlier, candidate, backup, sys.peer or pps.peer.
	Selection string
	Stratum   int
	// Reach is the reach register.
	Reach uint8
	// Poll is the host poll interval.
	Poll time.Duration
	// Offset is the local clock minus the peer's, seconds; Delay, Jitter
	// and Dispersion are seconds.
	Offset, Delay, Jitter, Dispersion float64
}

// Data is one reading of ntpd.
type Data struct {
	System System
	Peers  []Peer
}

// Client reads ntpd over mode 6. Not safe for concurrent use.
type Client struct {
	address string
	timeout time.Duration
	dial    Dialer

	conn *checkedConn
	lib  *control.NTPClient
}

// NewClient returns a client for ntpd at address. It dials lazily.
func NewClient(address string, timeout time.Duration) *Client {
	return &Client{address: address, timeout: timeout, dial: dialUDP}
}

// Close closes the connection.
func (c *Client) Close() error {
	if c.conn == nil {
		return nil
	}
	err := c.conn.Close()
	c.conn, c.lib = nil, nil
	return err
}

// Poll reads the system variables and every association's variables.
func (c *Client) Poll(ctx context.Context) (Data, error) {
	if c.conn == nil {
		conn, err := c.dial(ctx, c.address)
		if err != nil {
			return Data{}, fmt.Errorf("opening UDP to ntpd at %s: %w", c.address, err)
		}
		c.conn = &checkedConn{Conn: conn}
		c.lib = &control.NTPClient{Connection: c.conn, Sequence: uint16(time.Now().UnixNano())}
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

// vnMode is the first byte of a request: NTP version 3, mode 6 (control).
const vnMode = 3<<3 | control.Mode

func (c *Client) request(ctx context.Context, op uint8, assoc uint16, what string) (*control.NTPControlMsg, error) {
	deadline := time.Now().Add(c.timeout)
	if d, ok := ctx.Deadline(); ok && d.Before(deadline) {
		deadline = d
	}
	if err := c.conn.SetDeadline(deadline); err != nil {
		return nil, err
	}
	m, err := c.lib.Communicate(&control.NTPControlMsgHead{VnMode: vnMode, REMOp: op, AssociationID: assoc})
	if err != nil {
		return nil, c.explain(what, err)
	}
	if m.HasError() {
		return nil, fmt.Errorf("ntpd at %s answered %s with an error (status %#04x): is mode 6 refused by a `restrict ... noquery` line?", c.address, what, m.Status)
	}
	return m, nil
}

func (c *Client) explain(what string, err error) error {
	var ne interface{ Timeout() bool }
	switch {
	case errors.As(err, &ne) && ne.Timeout():
		return fmt.Errorf("ntpd did not answer %s within %s on %s: ntpd is not running, or `restrict default noquery` without `restrict 127.0.0.1` refuses queries: %w", what, c.timeout, c.address, err)
	case errors.Is(err, syscall.ECONNREFUSED):
		return fmt.Errorf("nothing listens on %s: ntpd is not running: %w", c.address, err)
	}
	return fmt.Errorf("reading %s from ntpd at %s: %w", what, c.address, err)
}

func (c *Client) poll(ctx context.Context) (Data, error) {
	var d Data
	st, err := c.request(ctx, control.OpReadStatus, 0, "the association list")
	if err != nil {
		return d, err
	}
	assocs, err := st.GetAssociations()
	if err != nil {
		return d, fmt.Errorf("decoding ntpd's association list: %w", err)
	}
	sv, err := c.request(ctx, control.OpReadVariables, 0, "the system variables")
	if err != nil {
		return d, err
	}
	vars, err := parseVars(sv.Data)
	if err != nil {
		return d, fmt.Errorf("decoding ntpd's system variables: %w", err)
	}
	d.System = newSystem(vars)
	ids := make([]uint16, 0, len(assocs))
	for id := range assocs {
		ids = append(ids, id)
	}
	sort.Slice(ids, func(i, j int) bool { return ids[i] < ids[j] })
	for _, id := range ids {
		pv, err := c.request(ctx, control.OpReadVariables, id, fmt.Sprintf("association %d", id))
		if err != nil {
			return d, err
		}
		vars, err := parseVars(pv.Data)
		if err != nil {
			return d, fmt.Errorf("decoding ntpd's variables of association %d: %w", id, err)
		}
		d.Peers = append(d.Peers, newPeer(id, control.ReadPeerStatusWord(pv.Status), vars))
	}
	return d, nil
}

// parseVars decodes "k=v, k=v" text; quoted values may hold commas.
func parseVars(b []byte) (map[string]string, error) {
	m := map[string]string{}
	s := string(b)
	for len(s) > 0 {
		s = strings.TrimLeft(s, " ,\r\n")
		if s == "" {
			break
		}
		eq := strings.IndexAny(s, "=,")
		if eq < 0 || s[eq] == ',' {
			// A flag without a value.
			end := eq
			if end < 0 {
				end = len(s)
			}
			m[strings.TrimSpace(s[:end])] = ""
			s = s[end:]
			continue
		}
		k := strings.TrimSpace(s[:eq])
		s = s[eq+1:]
		var v string
		if strings.HasPrefix(s, `"`) {
			end := strings.IndexByte(s[1:], '"')
			if end < 0 {
				return nil, fmt.Errorf("unterminated quoted value of %q", k)
			}
			v, s = s[1:1+end], s[2+end:]
		} else {
			end := strings.IndexByte(s, ',')
			if end < 0 {
				end = len(s)
			}
			v, s = strings.TrimSpace(s[:end]), s[end:]
		}
		m[k] = v
	}
	if len(m) == 0 {
		return nil, errors.New("no variables in the reply")
	}
	return m, nil
}

func num(m map[string]string, k string) float64 {
	f, err := strconv.ParseFloat(m[k], 64)
	if err != nil || math.IsNaN(f) || math.IsInf(f, 0) {
		return 0
	}
	return f
}

func integer(m map[string]string, k string) int {
	i, err := strconv.ParseInt(m[k], 0, 32)
	if err != nil {
		return 0
	}
	return int(i)
}

const ms = 1e-3

func newSystem(m map[string]string) System {
	return System{
		Version:        m["version"],
		Leap:           integer(m, "leap") & 3,
		Stratum:        integer(m, "stratum"),
		RefID:          m["refid"],
		Offset:         0 - num(m, "offset")*ms, // 0 - x: never -0
		SysJitter:      num(m, "sys_jitter") * ms,
		ClockJitter:    num(m, "clk_jitter") * ms,
		ClockWander:    num(m, "clk_wander") * 1e-6,
		Frequency:      num(m, "frequency") * 1e-6,
		RootDelay:      num(m, "rootdelay") * ms,
		RootDispersion: num(m, "rootdisp") * ms,
	}
}

// selection names the peer status word's selection code as ntpq does.
func selection(code uint8) string {
	return [8]string{"reject", "falsetick", "excess", "outlier", "candidate", "backup", "sys.peer", "pps.peer"}[code&7]
}

func newPeer(id uint16, psw *control.PeerStatusWord, m map[string]string) Peer {
	reach, _ := strconv.ParseUint(m["reach"], 0, 8)
	if strings.HasPrefix(m["reach"], "0") && !strings.HasPrefix(m["reach"], "0x") && len(m["reach"]) > 1 {
		// ntpq shows reach in octal; some daemons send it that way too.
		reach, _ = strconv.ParseUint(m["reach"][1:], 8, 8)
	}
	hpoll := max(-30, min(integer(m, "hpoll"), 30))
	return Peer{
		AssociationID: id,
		Address:       m["srcadr"],
		RefID:         m["refid"],
		Selection:     selection(psw.PeerSelection),
		Stratum:       integer(m, "stratum"),
		Reach:         uint8(reach),
		Poll:          time.Duration(math.Ldexp(float64(time.Second), hpoll)),
		Offset:        0 - num(m, "offset")*ms,
		Delay:         num(m, "delay") * ms,
		Jitter:        num(m, "jitter") * ms,
		Dispersion:    num(m, "dispersion") * ms,
	}
}

// checkedConn drops replies whose sequence number is not the request's and
// anything that is not a mode 6 response.
type checkedConn struct {
	Conn
	seq uint16
}

func (c *checkedConn) Write(p []byte) (int, error) {
	if len(p) >= 4 {
		c.seq = binary.BigEndian.Uint16(p[2:4])
	}
	return c.Conn.Write(p)
}

func (c *checkedConn) Read(p []byte) (int, error) {
	for skipped := 0; ; skipped++ {
		n, err := c.Conn.Read(p)
		if err != nil || n < 12 {
			return n, err
		}
		if p[1]&0x80 == 0 || p[0]&7 != control.Mode {
			return 0, fmt.Errorf("packet is not a mode 6 response (first bytes %#x %#x)", p[0], p[1])
		}
		if binary.BigEndian.Uint16(p[2:4]) == c.seq {
			return n, nil
		}
		if skipped == 16 {
			return 0, errors.New("16 replies in a row with a wrong sequence number")
		}
	}
}
