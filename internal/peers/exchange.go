package peers

import (
	"bytes"
	"encoding/binary"
	"errors"
	"fmt"
	"net"
	"time"

	"github.com/beevik/ntp"
)

// Sample is one exchange with a peer.
type Sample struct {
	// Offset is the peer's clock minus this node's (NTP's clock offset,
	// ((t2−t1)+(t3−t4))/2).
	Offset time.Duration
	// RTT is the round trip, less the peer's time between receive and
	// transmit.
	RTT time.Duration
	// At is when the reply came, by this node's clock (monotonic reading
	// included).
	At time.Time
	// State is what the peer said of its own clock, when HasState (a
	// clockwatch that answers without it is older than the field).
	State    State
	HasState bool
}

// Exchanger does one timestamp exchange with a peer at addr ("host:port").
// The real one is github.com/beevik/ntp's client.
type Exchanger interface {
	Exchange(addr string, timeout time.Duration, key *Key) (Sample, error)
}

// The ways an exchange fails, the label of clockwatch_peer_exchanges_total
// (with ok).
var (
	// ErrSpoofed: the reply's origin timestamp is not the random transmit
	// timestamp the request carried: not the answer to this request.
	ErrSpoofed = errors.New("the reply's origin timestamp is not the request's transmit timestamp")
	// ErrNotAgent: the reply is not a clockwatch agent's (leap, stratum or
	// reference id): an NTP server or something else on the port.
	ErrNotAgent = errors.New("not a clockwatch agent's reply")
	// ErrUnauthenticated: the reply's MAC is missing or wrong.
	ErrUnauthenticated = errors.New("the reply's MAC is missing or wrong")
)

// Exchange results, the label of clockwatch_peer_exchanges_total.
const (
	ExchangeOK              = "ok"
	ExchangeTimeout         = "timeout"
	ExchangeSpoofed         = "spoofed"
	ExchangeUnauthenticated = "unauthenticated"
	ExchangeNotAgent        = "not_agent"
	ExchangeRTTTooLarge     = "rtt_too_large"
	ExchangeError           = "error"
)

// ExchangeResults lists the results, in the metric's order.
func ExchangeResults() []string {
	return []string{ExchangeOK, ExchangeTimeout, ExchangeSpoofed, ExchangeUnauthenticated, ExchangeNotAgent, ExchangeRTTTooLarge, ExchangeError}
}

// resultOf classifies an exchange's error.
func resultOf(err error) string {
	var ne net.Error
	switch {
	case err == nil:
		return ExchangeOK
	case errors.Is(err, ErrSpoofed):
		return ExchangeSpoofed
	case errors.Is(err, ErrUnauthenticated):
		return ExchangeUnauthenticated
	case errors.Is(err, ErrNotAgent):
		return ExchangeNotAgent
	case errors.As(err, &ne) && ne.Timeout():
		return ExchangeTimeout
	}
	return ExchangeError
}

// NTPExchanger is the real Exchanger: an NTPv4 client query with
// github.com/beevik/ntp, which sends a random transmit timestamp and
// refuses a reply whose origin timestamp is not it, reads the kernel's
// receive time of the reply, and signs and checks NTP MACs. A new
// connected UDP socket each exchange: the kernel delivers only datagrams
// from the peer's address and port to it.
type NTPExchanger struct{}

var _ Exchanger = NTPExchanger{}

// Exchange implements Exchanger.
func (NTPExchanger) Exchange(addr string, timeout time.Duration, key *Key) (Sample, error) {
	ext := &stateExtension{}
	opt := ntp.QueryOptions{Timeout: timeout, Extensions: []ntp.Extension{ext}}
	if key != nil {
		opt.Auth = key.auth()
	}
	r, err := ntp.QueryWithOptions(addr, opt)
	switch {
	case errors.Is(err, ntp.ErrServerResponseMismatch):
		return Sample{}, fmt.Errorf("%s: %w", addr, ErrSpoofed)
	case errors.Is(err, ntp.ErrAuthFailed), errors.Is(err, ntp.ErrAuthNAK):
		return Sample{}, fmt.Errorf("%s: %w", addr, ErrUnauthenticated)
	case err != nil:
		return Sample{}, fmt.Errorf("%s: %w", addr, err)
	}
	if err := isAgent(r); err != nil {
		return Sample{}, fmt.Errorf("%s: %w", addr, err)
	}
	s := Sample{Offset: r.ClockOffset, RTT: r.RTT, At: time.Now()}
	s.State, s.HasState = ext.state, ext.ok
	return s, nil
}

// isAgent checks that a reply is marked as an agent's.
func isAgent(r *ntp.Response) error {
	if r.Leap != ntp.LeapNotInSync || r.Stratum != stratumUnsynchronized || r.ReferenceID != binary.BigEndian.Uint32([]byte(RefID)) {
		var id [4]byte
		binary.BigEndian.PutUint32(id[:], r.ReferenceID)
		return fmt.Errorf("%w: leap %d, stratum %d, reference id %q (an agent's: 3, 16, %q)", ErrNotAgent, r.Leap, r.Stratum, printable(id[:]), RefID)
	}
	return nil
}

// stateExtension adds the state field's placeholder to a query and reads
// the peer's state from the reply (github.com/beevik/ntp's Extension). The
// reply's MAC is checked after it: a state read from a reply that fails
// is never used, since the exchange fails.
type stateExtension struct {
	state State
	ok    bool
}

func (e *stateExtension) ProcessQuery(buf *bytes.Buffer) error {
	buf.Write(appendStateField(nil, nil))
	return nil
}

func (e *stateExtension) ProcessResponse(buf []byte) error {
	e.state, e.ok = parseStateField(buf)
	return nil
}

// Best is NTP's clock filter for one round: of the samples whose round trip
// is at most maxRTT, the one with the least round trip (its offset is the
// least spoiled by queueing on the path). ok is false when none qualifies.
func Best(samples []Sample, maxRTT time.Duration) (best Sample, ok bool) {
	for _, s := range samples {
		if s.RTT < 0 || s.RTT > maxRTT {
			continue
		}
		if !ok || s.RTT < best.RTT {
			best, ok = s, true
		}
	}
	return best, ok
}
