package ntpd

import (
	"context"
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

	"github.com/clockwatch/clockwatch/internal/timesource"
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

	conn Conn
	seq  uint16
	buf  []byte
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
	c.conn = nil
	return err
}

// Poll reads the system variables and every association's variables. It
// ends by ctx's deadline at the latest: the poller gives each poll one (a
// slow ntpd answering each of many associations just within the request
// timeout would otherwise keep a poll, and the reading it replaces, going
// for minutes).
func (c *Client) Poll(ctx context.Context) (Data, error) {
	if c.conn == nil {
		conn, err := c.dial(ctx, c.address)
		if err != nil {
			return Data{}, fmt.Errorf("opening UDP to ntpd at %s: %w", c.address, err)
		}
		c.conn = conn
		c.seq = uint16(time.Now().UnixNano())
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
const vnMode = 3<<3 | 6

// maxSkipped is how many datagrams of other exchanges (late replies to
// earlier requests) one request reads past before it gives up.
const maxSkipped = 16

func (c *Client) request(ctx context.Context, op uint8, assoc uint16, what string) (message, error) {
	deadline := time.Now().Add(c.timeout)
	ctxDeadline, bounded := ctx.Deadline()
	if bounded && ctxDeadline.Before(deadline) {
		deadline = ctxDeadline
	}
	if err := ctx.Err(); err != nil {
		return message{}, c.overdue(ctx, what, err)
	}
	if err := c.conn.SetDeadline(deadline); err != nil {
		return message{}, err
	}
	c.seq++
	if _, err := c.conn.Write(request(c.seq, op, assoc)); err != nil {
		return message{}, c.explain(what, err)
	}
	if c.buf == nil {
		c.buf = make([]byte, maxDatagram)
	}
	r := newReassembler(c.seq, op, assoc)
	for skipped := 0; ; {
		n, err := c.conn.Read(c.buf)
		if err != nil {
			if bounded && !time.Now().Before(ctxDeadline) {
				return message{}, c.overdue(ctx, what, err)
			}
			return message{}, c.explain(what, err)
		}
		done, skip, err := r.add(c.buf[:n])
		if err != nil {
			err = fmt.Errorf("reading %s from ntpd at %s: %w", what, c.address, err)
			if !errors.Is(err, errNotMode6) {
				err = badAnswer(err)
			}
			return message{}, err
		}
		if skip {
			if skipped++; skipped > maxSkipped {
				return message{}, fmt.Errorf("reading %s from ntpd at %s: %d replies in a row with a wrong sequence number", what, c.address, maxSkipped)
			}
			continue
		}
		if !done {
			continue
		}
		if r.err {
			return message{}, fmt.Errorf("ntpd at %s answered %s with an error (status %#04x): is mode 6 refused by a `restrict ... noquery` line?", c.address, what, r.status)
		}
		return r.message(), nil
	}
}

// answeredError marks a failure of an ntpd that answered mode 6 with
// something that does not decode: it is there, and failing.
type answeredError struct{ err error }

func (e answeredError) Error() string { return e.err.Error() }
func (e answeredError) Unwrap() error { return e.err }

func badAnswer(err error) error { return answeredError{err} }

// Answered reports whether err, a failed poll's, says ntpd answered mode 6
// (with figures that mean nothing or a reply that does not decode) rather
// than that nothing did: "auto" has then found it, failing, not absent.
func Answered(err error) bool {
	var a answeredError
	return errors.As(err, &a) || errors.Is(err, timesource.ErrFigure)
}

// overdue is the error of a poll that ran past its deadline.
func (c *Client) overdue(ctx context.Context, what string, err error) error {
	d, _ := ctx.Deadline()
	return fmt.Errorf("ntpd at %s: the poll ran past its deadline (%s) before %s: %w", c.address, d.Format(time.TimeOnly+".000"), what, err)
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
	st, err := c.request(ctx, opReadStatus, 0, "the association list")
	if err != nil {
		return d, err
	}
	assocs, err := associations(st.data)
	if err != nil {
		return d, badAnswer(fmt.Errorf("decoding ntpd's association list: %w", err))
	}
	sv, err := c.request(ctx, opReadVariables, 0, "the system variables")
	if err != nil {
		return d, err
	}
	vars, err := parseVars(sv.data)
	if err != nil {
		return d, badAnswer(fmt.Errorf("decoding ntpd's system variables: %w", err))
	}
	if d.System, err = newSystem(vars); err != nil {
		return d, badAnswer(fmt.Errorf("decoding ntpd's system variables: %w", err))
	}
	sort.Slice(assocs, func(i, j int) bool { return assocs[i].id < assocs[j].id })
	for i, a := range assocs {
		pv, err := c.request(ctx, opReadVariables, a.id, fmt.Sprintf("association %d (%d of %d)", a.id, i+1, len(assocs)))
		if err != nil {
			return d, err
		}
		vars, err := parseVars(pv.data)
		if err != nil {
			return d, badAnswer(fmt.Errorf("decoding ntpd's variables of association %d: %w", a.id, err))
		}
		p, err := newPeer(a.id, pv.status, vars)
		if err != nil {
			return d, badAnswer(fmt.Errorf("decoding ntpd's variables of association %d: %w", a.id, err))
		}
		d.Peers = append(d.Peers, p)
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

// figures decodes ntpd's numbers: a missing key or text that is not a
// finite number is an error naming the key, never 0 (a reply with
// rootdisp=inf or without an offset used to read as a perfect clock).
type figures struct {
	m   map[string]string
	err []error
}

// num is the number under k, required.
func (f *figures) num(k string) float64 {
	v, ok := f.m[k]
	if !ok {
		f.err = append(f.err, fmt.Errorf("%w: no %q", timesource.ErrFigure, k))
		return 0
	}
	x, err := strconv.ParseFloat(v, 64)
	if err != nil || math.IsNaN(x) || math.IsInf(x, 0) {
		f.err = append(f.err, fmt.Errorf("%w: %s=%q is not a finite number", timesource.ErrFigure, k, v))
		return 0
	}
	return x
}

// bound is num for a figure that cannot be negative (a delay, a
// dispersion, a jitter).
func (f *figures) bound(k string) float64 {
	x := f.num(k)
	if x < 0 {
		f.err = append(f.err, fmt.Errorf("%w: %s=%s is below zero", timesource.ErrFigure, k, f.m[k]))
		return 0
	}
	return x
}

// opt is num for a figure only the metrics show: missing is 0, present and
// not a finite number an error.
func (f *figures) opt(k string) float64 {
	if _, ok := f.m[k]; !ok {
		return 0
	}
	return f.num(k)
}

// optBound is opt for a figure that cannot be negative.
func (f *figures) optBound(k string) float64 {
	if _, ok := f.m[k]; !ok {
		return 0
	}
	return f.bound(k)
}

// integer is the integer under k, required.
func (f *figures) integer(k string) int {
	v, ok := f.m[k]
	if !ok {
		f.err = append(f.err, fmt.Errorf("%w: no %q", timesource.ErrFigure, k))
		return 0
	}
	i, err := strconv.ParseInt(v, 0, 32)
	if err != nil {
		f.err = append(f.err, fmt.Errorf("%w: %s=%q is not an integer", timesource.ErrFigure, k, v))
		return 0
	}
	return int(i)
}

// optInteger is integer, 0 when missing.
func (f *figures) optInteger(k string) int {
	if _, ok := f.m[k]; !ok {
		return 0
	}
	return f.integer(k)
}

const ms = 1e-3

func newSystem(m map[string]string) (System, error) {
	f := &figures{m: m}
	s := System{
		Version:        m["version"],
		Leap:           f.integer("leap") & 3,
		Stratum:        f.integer("stratum"),
		RefID:          m["refid"],
		Offset:         0 - f.num("offset")*ms, // 0 - x: never -0
		SysJitter:      f.optBound("sys_jitter") * ms,
		ClockJitter:    f.optBound("clk_jitter") * ms,
		ClockWander:    f.opt("clk_wander") * 1e-6,
		Frequency:      f.opt("frequency") * 1e-6,
		RootDelay:      f.bound("rootdelay") * ms,
		RootDispersion: f.bound("rootdisp") * ms,
	}
	return s, errors.Join(f.err...)
}

// selection names the peer status word's selection code as ntpq does.
func selection(code uint8) string {
	return [8]string{"reject", "falsetick", "excess", "outlier", "candidate", "backup", "sys.peer", "pps.peer"}[code&7]
}

func newPeer(id uint16, status uint16, m map[string]string) (Peer, error) {
	f := &figures{m: m}
	reach, _ := strconv.ParseUint(m["reach"], 0, 8)
	if strings.HasPrefix(m["reach"], "0") && !strings.HasPrefix(m["reach"], "0x") && len(m["reach"]) > 1 {
		// ntpq shows reach in octal; some daemons send it that way too.
		reach, _ = strconv.ParseUint(m["reach"][1:], 8, 8)
	}
	hpoll := max(-30, min(f.optInteger("hpoll"), 30))
	p := Peer{
		AssociationID: id,
		Address:       m["srcadr"],
		RefID:         m["refid"],
		Selection:     selection(uint8(status >> 8)),
		Stratum:       f.optInteger("stratum"),
		Reach:         uint8(reach),
		Poll:          time.Duration(math.Ldexp(float64(time.Second), hpoll)),
		Offset:        0 - f.opt("offset")*ms,
		Delay:         f.opt("delay") * ms, // ntpd shows a negative delay for a broadcast peer
		Jitter:        f.optBound("jitter") * ms,
		Dispersion:    f.optBound("dispersion") * ms,
	}
	return p, errors.Join(f.err...)
}
