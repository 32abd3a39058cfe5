package chrony

import (
	"bytes"
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"math"
	"os"
	"strconv"
	"strings"
	"syscall"
	"time"

	fbchrony "github.com/facebook/time/ntp/chrony"
)

// Resolver looks up names of addresses; *net.Resolver fits.
type Resolver interface {
	LookupAddr(ctx context.Context, addr string) ([]string, error)
}

// Client polls chronyd. It is not safe for concurrent use: the Poller owns
// one. After any error the connection is closed and the next Poll dials
// again.
type Client struct {
	dialer   Dialer
	timeout  time.Duration
	resolver Resolver // nil: no DNS lookups

	// dialed is whether the last Poll got a connection.
	dialed    bool
	conn      *checkedConn
	lib       *fbchrony.Client
	transport Transport
	address   string
	// names caches source names by address, from chronyd or DNS.
	names map[string]string
	// warning is why the current connection is limited (UDP because the
	// unix socket cannot be used), nil when it is not.
	warning error
	// window is how many requests a poll sends before it reads the first
	// reply on this connection (1: one at a time); maxWindow bounds it, and
	// is halved each time a reply is lost or late while several were in
	// flight.
	window, maxWindow int
	// queueLen is the kernel's queue length of unix datagram sockets.
	queueLen func() int
}

// NewClient returns a client for the configured chronyd. It dials lazily.
func NewClient(cfg Config, resolver Resolver) *Client {
	return newClient(newNetDialer(cfg), cfg.Timeout, resolver)
}

func newClient(d Dialer, timeout time.Duration, resolver Resolver) *Client {
	return &Client{dialer: d, timeout: timeout, resolver: resolver, names: map[string]string{}, maxWindow: maxWindow, queueLen: unixQueueLen}
}

// maxWindow is the most requests a poll has in flight: source data and
// sourcestats of 4 sources.
const maxWindow = 8

// windowFor returns how many requests may be in flight on a transport.
// Over the unix socket chronyd's replies queue on clockwatch's reply socket,
// whose queue holds net.unix.max_dgram_qlen datagrams (10 by default) and
// chronyd drops a reply that does not fit: the window leaves room for two
// strays. Over UDP chronyd may rate-limit command packets from other hosts
// (cmdratelimit): requests go one at a time.
func (c *Client) windowFor(tr Transport) int {
	if tr != TransportUnix {
		return 1
	}
	return max(1, min(c.maxWindow, c.queueLen()-2))
}

// unixQueueLen reads net.unix.max_dgram_qlen, the Linux default when it
// cannot be read.
func unixQueueLen() int {
	b, err := os.ReadFile("/proc/sys/net/unix/max_dgram_qlen")
	if err != nil {
		return 10
	}
	n, err := strconv.Atoi(strings.TrimSpace(string(b)))
	if err != nil {
		return 10
	}
	return n
}

// Transport returns how the client reached chronyd last, and where.
func (c *Client) Transport() (Transport, string) { return c.transport, c.address }

// Close closes the connection and removes the reply socket.
func (c *Client) Close() error {
	if c.conn == nil {
		return nil
	}
	err := c.conn.Close()
	c.conn, c.lib = nil, nil
	return err
}

// Warning returns why the current connection is limited (for example UDP
// because chronyd's socket is not accessible), or nil.
func (c *Client) Warning() error { return c.warning }

// dial connects the client if it is not connected.
func (c *Client) dial(ctx context.Context) error {
	if c.conn != nil {
		return nil
	}
	conn, tr, addr, err := c.dialer.Dial(ctx)
	c.transport, c.address = tr, addr
	if conn == nil {
		return err
	}
	c.warning = err
	c.conn = &checkedConn{Conn: conn}
	c.window = c.windowFor(tr)
	// Start from a random-ish sequence so that replies meant for an
	// earlier process on a reused socket path never match.
	c.lib = &fbchrony.Client{Connection: c.conn, Sequence: uint32(time.Now().UnixNano())}
	return nil
}

// Dialed reports whether the last Poll got a connection (a failure after
// it is of chronyd's answers, or of their absence, not of the dial).
func (c *Client) Dialed() bool { return c.dialed }

// Poll reads tracking, sources and sourcestats from chronyd.
func (c *Client) Poll(ctx context.Context) (Data, error) {
	c.dialed = false
	if err := c.dial(ctx); err != nil {
		return Data{}, err
	}
	c.dialed = true
	d, err := c.poll(ctx)
	if err != nil {
		var ne interface{ Timeout() bool }
		if c.window > 1 && (errors.Is(err, errReplyLost) || errors.As(err, &ne) && ne.Timeout()) {
			// A reply dropped at the end of a window looks like chronyd not
			// answering: either way the next polls send fewer at once.
			c.maxWindow = max(1, c.window/2)
		}
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
	tracking, count := trackingRequest(), sourcesRequest()
	if err := c.sendAhead(ctx, "tracking", tracking, count); err != nil {
		return d, err
	}
	r, err := c.communicate(ctx, tracking, "tracking")
	if err != nil {
		return d, err
	}
	tr, ok := r.(*fbchrony.ReplyTracking)
	if !ok {
		return d, fmt.Errorf("getting tracking: unexpected reply %T", r)
	}
	d.Tracking = newTracking(&tr.Tracking)
	if err := d.Tracking.check(); err != nil {
		return d, fmt.Errorf("chronyd's tracking report from %s means nothing: %w", c.address, err)
	}

	r, err = c.communicate(ctx, count, "sources")
	if err != nil {
		return d, err
	}
	ns, ok := r.(*fbchrony.ReplySources)
	if !ok {
		return d, fmt.Errorf("getting the number of sources: unexpected reply %T", r)
	}
	if ns.NSources < 0 || ns.NSources > maxSources {
		return d, fmt.Errorf("getting the number of sources: chronyd reports %d, more than %d", ns.NSources, maxSources)
	}
	d.Sources = make([]Source, 0, ns.NSources)
	addrs := make([]*fbchrony.IPAddr, 0, ns.NSources)
	// Source data and sourcestats of as many sources as the window holds
	// are sent together.
	per := max(1, c.window/2)
	reqs := make([]fbchrony.RequestPacket, 0, 2*per)
	for first := 0; first < ns.NSources; first += per {
		reqs = reqs[:0]
		for i := first; i < min(first+per, ns.NSources); i++ {
			reqs = append(reqs, sourceDataRequest(i), sourceStatsRequest(i))
		}
		if err := c.sendAhead(ctx, "source data", reqs...); err != nil {
			return d, fmt.Errorf("source #%d: %w", first, err)
		}
		for j := 0; j < len(reqs); j += 2 {
			i := first + j/2
			r, err := c.communicate(ctx, reqs[j], "source data")
			if err != nil {
				return d, fmt.Errorf("source #%d: %w", i, err)
			}
			sd, ok := r.(*fbchrony.ReplySourceData)
			if !ok {
				return d, fmt.Errorf("getting source data for source #%d: unexpected reply %T", i, r)
			}
			s := newSource(&sd.SourceData)
			// sourcestats answers NOSUCHSOURCE for a source without samples
			// yet; that is not an error of the poll.
			r, err = c.communicate(ctx, reqs[j+1], "sourcestats")
			switch {
			case err == nil:
				if ss, ok := r.(*fbchrony.ReplySourceStats); ok {
					s.Stats = newSourceStats(&ss.SourceStats)
				}
			case c.conn.lastStatus == statusNoSuchSource:
			default:
				return d, fmt.Errorf("source #%d: %w", i, err)
			}
			d.Sources = append(d.Sources, s)
			addrs = append(addrs, sd.IPAddr)
		}
	}
	// Names come last: asking chronyd for one is a request of its own,
	// never sent ahead.
	seen := make(map[string]bool, len(d.Sources))
	for i := range d.Sources {
		s := &d.Sources[i]
		s.Name = c.name(ctx, addrs[i], *s)
		seen[s.Address] = true
	}
	for a := range c.names {
		if !seen[a] {
			delete(c.names, a)
		}
	}
	return d, nil
}

// sendAhead sends requests before the library asks for them, numbered and
// encoded as its next calls of Communicate will number and encode them, so
// that those calls find them sent (see checkedConn). It does nothing when
// the window holds one request. what names the first request, for errors.
func (c *Client) sendAhead(ctx context.Context, what string, reqs ...fbchrony.RequestPacket) error {
	if c.window < 2 || len(reqs) < 2 {
		return nil
	}
	if err := c.setDeadline(ctx); err != nil {
		return err
	}
	enc := make([][]byte, len(reqs))
	for i, r := range reqs {
		r.SetSequence(c.lib.Sequence + uint32(i) + 1)
		var b bytes.Buffer
		if err := binary.Write(&b, binary.BigEndian, r); err != nil {
			return fmt.Errorf("encoding a request to chronyd: %w", err)
		}
		enc[i] = b.Bytes()
	}
	if err := c.conn.sendAhead(enc); err != nil {
		return c.explain(what, err)
	}
	return nil
}

// maxSources bounds the source count a reply may claim, so that a corrupt
// reply cannot make a poll send millions of requests.
const maxSources = 4096

// Status codes of replies (candm.h) that the client treats specially.
const (
	statusUnauth        = 2
	statusNoSuchSource  = 4
	statusBadPktVersion = 18
)

// name returns the name of a source: chronyd's (over the unix socket), else
// reverse DNS when enabled, else the address. Names are cached.
func (c *Client) name(ctx context.Context, ip *fbchrony.IPAddr, s Source) string {
	if n, ok := c.names[s.Address]; ok {
		return n
	}
	n := s.Address
	if s.Mode != "refclock" {
		if c.transport == TransportUnix {
			// Errors only cost the name: the address stands in.
			if r, err := c.communicate(ctx, sourceNameRequest(ip), "sourcename"); err == nil {
				if sn, ok := r.(*fbchrony.ReplyNTPSourceName); ok {
					if v := sn.Name; v != "" {
						n = v
					}
				}
			}
		}
		if n == s.Address && c.resolver != nil {
			lctx, cancel := context.WithTimeout(ctx, c.timeout)
			if names, err := c.resolver.LookupAddr(lctx, s.Address); err == nil && len(names) > 0 {
				n = trimDot(names[0])
			}
			cancel()
		}
	}
	c.names[s.Address] = n
	return n
}

func trimDot(s string) string {
	if len(s) > 1 && s[len(s)-1] == '.' {
		return s[:len(s)-1]
	}
	return s
}

// communicate sends one request with a deadline and explains failures.
func (c *Client) communicate(ctx context.Context, req fbchrony.RequestPacket, what string) (fbchrony.ResponsePacket, error) {
	if err := c.setDeadline(ctx); err != nil {
		return nil, err
	}
	r, err := c.lib.Communicate(req)
	if err != nil {
		return nil, c.explain(what, err)
	}
	return r, nil
}

// setDeadline bounds the next exchange by the timeout and ctx.
func (c *Client) setDeadline(ctx context.Context) error {
	deadline := time.Now().Add(c.timeout)
	if d, ok := ctx.Deadline(); ok && d.Before(deadline) {
		deadline = d
	}
	if err := c.conn.SetDeadline(deadline); err != nil {
		return fmt.Errorf("setting a deadline on the connection to chronyd: %w", err)
	}
	return nil
}

// explain turns a failed request into one sentence that says what to do.
func (c *Client) explain(what string, err error) error {
	var ne interface{ Timeout() bool }
	switch {
	case errors.Is(err, errReplyLost):
		return fmt.Errorf("chronyd at %s dropped its reply to %q (clockwatch's reply socket held too many: net.unix.max_dgram_qlen); the next polls send fewer requests at once: %w", c.address, what, err)
	case c.conn.lastStatus == statusUnauth && c.transport == TransportUDP:
		return fmt.Errorf("chronyd refuses %q over UDP %s: only tracking, sources, sourcestats and activity are allowed there; use the unix socket for more: %w", what, c.address, err)
	case c.conn.lastStatus == statusUnauth:
		return fmt.Errorf("chronyd refuses %q on %s (not authorised): %w", what, c.address, err)
	case c.conn.lastStatus == statusBadPktVersion:
		return fmt.Errorf("chronyd at %s does not speak command protocol version 6 (chrony 4.x or newer is needed) for %q: %w", c.address, what, err)
	case c.conn.lastStatus != 0:
		return fmt.Errorf("chronyd at %s rejected %q: %w", c.address, what, err)
	case errors.As(err, &ne) && ne.Timeout() && c.transport == TransportUnix:
		return fmt.Errorf("chronyd did not answer %q within %s on %s: if this persists, chronyd cannot write to clockwatch's reply socket (set chrony.reply_socket_dir to a directory chronyd can reach, not a private /tmp): %w", what, c.timeout, c.address, err)
	case errors.As(err, &ne) && ne.Timeout():
		return fmt.Errorf("chronyd did not answer %q within %s on UDP %s: chronyd is not running, its command port is off (cmdport 0) or bound elsewhere (bindcmdaddress): %w", what, c.timeout, c.address, err)
	case errors.Is(err, syscall.ECONNREFUSED) && c.transport == TransportUDP:
		return fmt.Errorf("nothing listens on chronyd's command port %s: chronyd is not running or its command port is off (cmdport 0): %w", c.address, err)
	case errors.Is(err, syscall.ECONNREFUSED), errors.Is(err, syscall.ENOENT), errors.Is(err, os.ErrNotExist):
		return fmt.Errorf("chronyd is gone from %s (restarted or stopped) while getting %s: %w", c.address, what, err)
	}
	return fmt.Errorf("getting %s from chronyd at %s: %w", what, c.address, err)
}

func newTracking(t *fbchrony.Tracking) Tracking {
	name := fbchrony.RefidToString(t.RefID)
	addr := ""
	if t.IPAddr != nil && !t.IPAddr.IsUnspecified() {
		addr = t.IPAddr.String()
		name = addr
	}
	return Tracking{
		RefID:             t.RefID,
		RefName:           name,
		Address:           addr,
		Stratum:           int(t.Stratum),
		Leap:              Leap(t.LeapStatus),
		RefTime:           t.RefTime,
		SystemOffset:      -t.CurrentCorrection,
		LastOffset:        t.LastOffset,
		RMSOffset:         t.RMSOffset,
		Frequency:         t.FreqPPM * 1e-6,
		ResidualFrequency: t.ResidFreqPPM * 1e-6,
		Skew:              t.SkewPPM * 1e-6,
		RootDelay:         t.RootDelay,
		RootDispersion:    t.RootDispersion,
		UpdateInterval:    t.LastUpdateInterval,
	}
}

func newSource(d *fbchrony.SourceData) Source {
	s := Source{
		Mode:                     modeName(d.Mode),
		State:                    d.State.String(),
		Stratum:                  int(d.Stratum),
		Poll:                     pollInterval(d.Poll),
		Reachability:             uint8(d.Reachability),
		NoSelect:                 d.Flags&fbchrony.FlagNoselect != 0,
		Prefer:                   d.Flags&fbchrony.FlagPrefer != 0,
		LastSampleAge:            -1,
		LastSampleOffset:         d.LatestMeas,
		LastSampleOriginalOffset: d.OrigLatestMeas,
		LastSampleError:          d.LatestMeasErr,
	}
	// chronyd says 2^32-1 seconds for a source that never gave a sample.
	if d.SinceSample != math.MaxUint32 {
		s.LastSampleAge = time.Duration(d.SinceSample) * time.Second
	}
	if d.Mode == fbchrony.SourceModeRef && d.IPAddr != nil {
		// A reference clock's "address" is its reference ID.
		s.Address = fbchrony.RefidToString(binary.BigEndian.Uint32(d.IPAddr.IP[:4]))
	} else if d.IPAddr != nil {
		s.Address = d.IPAddr.String()
	}
	return s
}

func modeName(m fbchrony.ModeType) string {
	switch m {
	case fbchrony.SourceModeClient:
		return "client"
	case fbchrony.SourceModePeer:
		return "peer"
	case fbchrony.SourceModeRef:
		return "refclock"
	}
	return "unknown"
}

// pollInterval turns chrony's log2 poll into a duration, bounded so that a
// corrupt reply cannot overflow.
func pollInterval(p int16) time.Duration {
	p = max(-30, min(p, 30))
	return time.Duration(math.Ldexp(float64(time.Second), int(p)))
}

func newSourceStats(s *fbchrony.SourceStats) *SourceStats {
	return &SourceStats{
		Samples:              int(s.NSamples),
		Runs:                 int(s.NRuns),
		Span:                 time.Duration(s.SpanSeconds) * time.Second,
		StdDev:               s.StandardDeviation,
		EstimatedOffset:      s.EstimatedOffset,
		EstimatedOffsetError: s.EstimatedOffsetErr,
		ResidualFrequency:    s.ResidFreqPPM * 1e-6,
		Skew:                 s.SkewPPM * 1e-6,
	}
}
