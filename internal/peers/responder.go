package peers

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"net/netip"
	"sync"
	"sync/atomic"
	"time"

	"github.com/clockwatch/clockwatch/stepdown"
)

// PacketConn is the responder's UDP socket: a datagram with the time the
// kernel received it, and a datagram sent. The real one is ListenUDP's.
type PacketConn interface {
	ReadFrom(b []byte) (n int, from netip.AddrPort, rx time.Time, err error)
	WriteTo(b []byte, to netip.AddrPort) (int, error)
	LocalAddr() net.Addr
	Close() error
}

// What became of a request, the label of clockwatch_peer_requests_total.
const (
	RequestAnswered        = "answered"
	RequestNotAllowed      = "not_allowed"
	RequestRateLimited     = "rate_limited"
	RequestMalformed       = "malformed"
	RequestUnauthenticated = "unauthenticated"
	requestResultsLength   = 5
)

// RequestResults lists the results, in the metric's order.
func RequestResults() [requestResultsLength]string {
	return [...]string{RequestAnswered, RequestNotAllowed, RequestRateLimited, RequestMalformed, RequestUnauthenticated}
}

// ResponderOptions are a responder's inputs besides its socket.
type ResponderOptions struct {
	// Allowed says whether a source may be answered; nil allows none.
	Allowed func(netip.Addr) bool
	// Keys, when not empty, are the only keys requests may be signed
	// with: an unsigned request is dropped.
	Keys Keys
	// Rate and Burst limit each source address: Burst requests at once,
	// then Rate a second.
	Rate  float64
	Burst int
	// MaxSources bounds the rate limiter's table (4096 if zero).
	MaxSources int
	// Local is this agent's state, for the replies that ask for it; nil:
	// unknown.
	Local func() State
	// Now reads the wall clock for the transmit timestamp; nil is
	// time.Now.
	Now    func() time.Time
	Logger *slog.Logger
}

// Responder answers the peers' NTP-format queries. It answers only what
// it is allowed to, at most Rate a second per source, never with a reply
// larger than the request, and always as a clock no NTP client takes for a
// time source: leap indicator 3 (alarm), stratum 16, reference id "CWPR".
type Responder struct {
	conn  PacketConn
	opts  ResponderOptions
	lim   *limiter
	start time.Time
	// mu guards lim (the handler runs on one goroutine; tests call it
	// directly).
	mu     sync.Mutex
	counts [requestResultsLength]atomic.Uint64
}

// NewResponder answers on conn; Run serves.
func NewResponder(conn PacketConn, o ResponderOptions) *Responder {
	if o.Now == nil {
		o.Now = time.Now
	}
	if o.Allowed == nil {
		o.Allowed = func(netip.Addr) bool { return false }
	}
	if o.MaxSources == 0 {
		o.MaxSources = 4096
	}
	if o.Logger == nil {
		o.Logger = slog.New(slog.DiscardHandler)
	}
	return &Responder{conn: conn, opts: o, lim: newLimiter(o.Rate, o.Burst, o.MaxSources), start: time.Now()}
}

// Addr is the socket's address.
func (r *Responder) Addr() net.Addr { return r.conn.LocalAddr() }

// Counts returns the requests by result, in RequestResults' order.
func (r *Responder) Counts() [requestResultsLength]uint64 {
	var out [requestResultsLength]uint64
	for i := range out {
		out[i] = r.counts[i].Load()
	}
	return out
}

// Run answers until ctx is done, then closes the socket.
func (r *Responder) Run(ctx context.Context) error {
	stop := context.AfterFunc(ctx, func() { r.conn.Close() })
	defer stop()
	buf := make([]byte, 2048)
	out := make([]byte, 0, 2048)
	var backoff time.Duration
	for {
		n, from, rx, err := r.conn.ReadFrom(buf)
		if err != nil {
			if ctx.Err() != nil || errors.Is(err, net.ErrClosed) {
				return nil
			}
			// ICMP errors surface on reads of an unconnected socket on
			// some kernels; anything else: wait a little and go on.
			backoff = min(max(2*backoff, time.Millisecond), time.Second)
			r.opts.Logger.Debug("peers: reading a request", "err", err)
			time.Sleep(backoff)
			continue
		}
		backoff = 0
		reply, result := r.handle(buf[:n], from, rx, out[:0])
		r.count(result)
		if reply != nil {
			if _, err := r.conn.WriteTo(reply, from); err != nil {
				r.opts.Logger.Debug("peers: answering", "to", from, "err", err)
			}
		}
	}
}

func (r *Responder) count(result string) {
	for i, s := range RequestResults() {
		if s == result {
			r.counts[i].Add(1)
		}
	}
}

// handle decides what to answer to req from from, received at rx: the
// reply (appended to out; nil for none) and what became of the request.
func (r *Responder) handle(req []byte, from netip.AddrPort, rx time.Time, out []byte) ([]byte, string) {
	src := from.Addr().Unmap()
	if !r.opts.Allowed(src) {
		return nil, RequestNotAllowed
	}
	r.mu.Lock()
	ok := r.lim.allow(src, time.Since(r.start))
	r.mu.Unlock()
	if !ok {
		return nil, RequestRateLimited
	}
	body := req
	var key *Key
	if len(r.opts.Keys) > 0 {
		payload, k, ok := r.opts.Keys.verify(req)
		if !ok {
			return nil, RequestUnauthenticated
		}
		body, key = payload, &k
	}
	q, err := parseHeader(body)
	if err != nil || q.Mode != modeClient || q.Version < 1 || q.Version > 4 {
		return nil, RequestMalformed
	}
	wantState := stateFieldAt(body[headerLen:])
	h := header{Leap: leapAlarm, Version: q.Version, Mode: modeServer, Stratum: stratumUnsynchronized,
		Poll: q.Poll, Precision: precision, Origin: q.Transmit, Receive: ntpTime(rx)}
	copy(h.RefID[:], RefID)
	var st *State
	if wantState {
		s := State{State: stepdown.StateUnknown}
		if r.opts.Local != nil {
			s = r.opts.Local()
		}
		st = &s
	}
	h.Transmit = ntpTime(r.opts.Now())
	out = h.append(out)
	if st != nil {
		out = appendStateField(out, st)
	}
	if key != nil {
		out = key.appendMAC(out)
	}
	if len(out) > len(req) {
		// By construction never: each part answers a part of the
		// request of the same size.
		panic(fmt.Sprintf("peers: a reply of %d bytes to a request of %d", len(out), len(req)))
	}
	return out, RequestAnswered
}
