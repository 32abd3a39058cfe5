package ntptest

import (
	"encoding/binary"
	"fmt"
	"net"
	"sync"
	"sync/atomic"
	"time"
)

// Mode6Request is one mode 6 (control) request a Mode6 server received.
type Mode6Request struct {
	Op          uint8
	Sequence    uint16
	Association uint16
}

// Mode6Handler answers a request with the datagrams to send back, in order
// (any number: none is silence, several are fragments or a flood). The
// server writes the request's sequence number into each; everything else is
// sent as given, so that a handler can replay captured bytes or hand-made
// nonsense.
type Mode6Handler func(Mode6Request) [][]byte

// Mode6 is a fake ntpd on loopback speaking mode 6: it answers each request
// with what its handler returns, after the handler's delay.
type Mode6 struct {
	conn    *net.UDPConn
	handler Mode6Handler
	delay   atomic.Int64
	served  atomic.Uint64
	wg      sync.WaitGroup
}

// StartMode6 listens on addr ("127.0.0.1:0") and serves until Close.
func StartMode6(addr string, h Mode6Handler) (*Mode6, error) {
	ua, err := net.ResolveUDPAddr("udp", addr)
	if err != nil {
		return nil, err
	}
	c, err := net.ListenUDP("udp", ua)
	if err != nil {
		return nil, fmt.Errorf("listening for mode 6 on %s: %w", addr, err)
	}
	s := &Mode6{conn: c, handler: h}
	s.wg.Add(1)
	go s.serve()
	return s, nil
}

// Addr is the address the fake listens on.
func (s *Mode6) Addr() string { return s.conn.LocalAddr().String() }

// SetDelay makes every answer wait d (a slow ntpd).
func (s *Mode6) SetDelay(d time.Duration) { s.delay.Store(int64(d)) }

// Served counts the requests answered.
func (s *Mode6) Served() uint64 { return s.served.Load() }

// Close stops the fake.
func (s *Mode6) Close() error {
	err := s.conn.Close()
	s.wg.Wait()
	return err
}

func (s *Mode6) serve() {
	defer s.wg.Done()
	serveUDP(s.conn, 2048, func(buf []byte, n int, peer *net.UDPAddr) {
		if n < 12 || buf[0]&7 != 6 || buf[1]&0x80 != 0 {
			return
		}
		req := Mode6Request{Op: buf[1] & 0x1f, Sequence: binary.BigEndian.Uint16(buf[2:4]), Association: binary.BigEndian.Uint16(buf[6:8])}
		if d := time.Duration(s.delay.Load()); d > 0 {
			time.Sleep(d)
		}
		for _, b := range s.handler(req) {
			b = append([]byte(nil), b...)
			if len(b) >= 4 {
				binary.BigEndian.PutUint16(b[2:4], req.Sequence)
			}
			if _, err := s.conn.WriteToUDP(b, peer); err != nil {
				break
			}
		}
		s.served.Add(1)
	})
}

// Mode6Fragment builds one mode 6 response datagram: op, the status word,
// the association, the fragment's offset, the "more" flag and its data
// (padded to 4 octets as ntpd pads).
func Mode6Fragment(op uint8, status, assoc uint16, offset int, more bool, data []byte) []byte {
	b := make([]byte, 12, 12+len(data)+3)
	b[0] = 3<<3 | 6
	b[1] = 0x80 | op&0x1f
	if more {
		b[1] |= 0x20
	}
	binary.BigEndian.PutUint16(b[4:6], status)
	binary.BigEndian.PutUint16(b[6:8], assoc)
	binary.BigEndian.PutUint16(b[8:10], uint16(offset))
	binary.BigEndian.PutUint16(b[10:12], uint16(len(data)))
	b = append(b, data...)
	for len(b)%4 != 0 {
		b = append(b, 0)
	}
	return b
}

// Mode6FragmentSize is the most data ntpd puts in one fragment.
const Mode6FragmentSize = 468

// Mode6Reply splits data into fragments of at most size octets (ntpd's
// Mode6FragmentSize; fragments but the last hold a multiple of 4) with
// their offsets, as ntpd sends a long reply.
func Mode6Reply(op uint8, status, assoc uint16, data []byte, size int) [][]byte {
	size -= size % 4
	if size <= 0 {
		size = Mode6FragmentSize
	}
	var out [][]byte
	for off := 0; ; off += size {
		end := min(off+size, len(data))
		out = append(out, Mode6Fragment(op, status, assoc, off, end < len(data), data[off:end]))
		if end == len(data) {
			return out
		}
	}
}

// Associations is the data of a READSTAT reply: each id with the status
// word.
func Associations(status uint16, ids ...uint16) []byte {
	b := make([]byte, 0, 4*len(ids))
	for _, id := range ids {
		b = binary.BigEndian.AppendUint16(b, id)
		b = binary.BigEndian.AppendUint16(b, status)
	}
	return b
}

// The mode 6 operations a fake answers.
const (
	OpReadStatus    = 1
	OpReadVariables = 2
)

// SyncedSystem is the system variables of a synchronised ntpd at stratum 2
// (ntpd's text, offsets in milliseconds); tests change one figure.
const SyncedSystem = `version="ntpd 4.2.8p15", leap=00, stratum=2, precision=-23, rootdelay=1.500, rootdisp=2.250, refid=192.0.2.1, offset=0.125, frequency=-3.500, sys_jitter=0.250, clk_jitter=0.100, clk_wander=0.020`

// PeerVariables is one synchronised association's variables.
const PeerVariables = `srcadr=192.0.2.1, srcport=123, leap=00, stratum=1, refid=GPS, reach=0xff, hpoll=6, offset=0.250, delay=0.300, dispersion=1.200, jitter=0.150`

// Ntpd answers as an ntpd with n associations (ids 1..n, the first the
// system peer) whose system variables are system (SyncedSystem, or a
// changed copy); each reply is fragmented as ntpd fragments. Change what it
// says with Set.
type Ntpd struct {
	mu     sync.Mutex
	n      int
	system string
}

// NewNtpd returns the answers of an ntpd with n associations.
func NewNtpd(n int, system string) *Ntpd { return &Ntpd{n: n, system: system} }

// Set changes the system variables from the next request on.
func (f *Ntpd) Set(system string) {
	f.mu.Lock()
	f.system = system
	f.mu.Unlock()
}

// Handle is the Mode6Handler.
func (f *Ntpd) Handle(r Mode6Request) [][]byte {
	f.mu.Lock()
	n, system := f.n, f.system
	f.mu.Unlock()
	switch {
	case r.Op == OpReadStatus:
		ids := make([]uint16, n)
		for i := range ids {
			ids[i] = uint16(i + 1)
		}
		return Mode6Reply(OpReadStatus, 0x0618, 0, Associations(0x9414, ids...), Mode6FragmentSize)
	case r.Op == OpReadVariables && r.Association == 0:
		return Mode6Reply(OpReadVariables, 0x0618, 0, []byte(system), Mode6FragmentSize)
	case r.Op == OpReadVariables && int(r.Association) <= n:
		status := uint16(0x9414)
		if r.Association == 1 {
			status = 0x9614 // sys.peer
		}
		return Mode6Reply(OpReadVariables, status, r.Association, []byte(PeerVariables), Mode6FragmentSize)
	}
	b := Mode6Fragment(r.Op, 0, r.Association, 0, false, nil)
	b[1] |= 0x40 // error: no such association
	return [][]byte{b}
}
