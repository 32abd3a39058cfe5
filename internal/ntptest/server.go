package ntptest

import (
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"net"
	"sync"
	"sync/atomic"
	"syscall"
	"time"
)

// ntpEpochOffset is the number of seconds from 1900-01-01 (NTP's era 0) to
// 1970-01-01 (Unix time).
const ntpEpochOffset = 2208988800

// Server is a running NTP server on loopback. It serves time.Now() shifted by
// Offset, as a stratum 1 server with the reference ID "TEST".
type Server struct {
	conn   *net.UDPConn
	offset atomic.Int64 // nanoseconds
	leap   atomic.Uint32
	silent atomic.Bool
	served atomic.Uint64
	wg     sync.WaitGroup
}

// Start listens on addr (for example "127.0.0.1:0") and serves until Close.
func Start(addr string) (*Server, error) {
	// SO_REUSEADDR lets an ntpd under test bind the wildcard address of the
	// same port in a test's own network namespace.
	lc := net.ListenConfig{Control: func(_, _ string, rc syscall.RawConn) error {
		var serr error
		err := rc.Control(func(fd uintptr) {
			serr = syscall.SetsockoptInt(int(fd), syscall.SOL_SOCKET, syscall.SO_REUSEADDR, 1)
		})
		return errors.Join(err, serr)
	}}
	pc, err := lc.ListenPacket(context.Background(), "udp", addr)
	if err != nil {
		return nil, fmt.Errorf("listening for NTP on %s: %w", addr, err)
	}
	s := &Server{conn: pc.(*net.UDPConn)}
	s.wg.Add(1)
	go s.serve()
	return s, nil
}

// Addr returns the UDP address the server listens on.
func (s *Server) Addr() *net.UDPAddr { return s.conn.LocalAddr().(*net.UDPAddr) }

// SetOffset makes the server's time run d ahead of this machine's clock
// (behind when d is negative) from the next reply on.
func (s *Server) SetOffset(d time.Duration) { s.offset.Store(int64(d)) }

// SetLeap sets the leap indicator of the replies (0 none, 1 insert, 2 delete,
// 3 unsynchronised).
func (s *Server) SetLeap(li uint8) { s.leap.Store(uint32(li & 3)) }

// SetSilent makes the server ignore requests (true) or answer them again.
func (s *Server) SetSilent(v bool) { s.silent.Store(v) }

// Served returns how many requests the server has answered.
func (s *Server) Served() uint64 { return s.served.Load() }

// Close stops the server and waits for it to finish.
func (s *Server) Close() error {
	err := s.conn.Close()
	s.wg.Wait()
	return err
}

func (s *Server) now() time.Time { return time.Now().Add(time.Duration(s.offset.Load())) }

func (s *Server) serve() {
	defer s.wg.Done()
	serveUDP(s.conn, 1024, func(buf []byte, n int, peer *net.UDPAddr) {
		rx := s.now()
		if n < 48 || s.silent.Load() {
			return
		}
		mode := buf[0] & 7
		if mode != 3 { // client requests only
			return
		}
		version := (buf[0] >> 3) & 7
		var reply [48]byte
		reply[0] = byte(s.leap.Load())<<6 | version<<3 | 4 // server mode
		reply[1] = 1                                       // stratum 1
		reply[2] = buf[2]                                  // poll
		reply[3] = 0xec                                    // precision 2^-20
		binary.BigEndian.PutUint32(reply[4:], 0)           // root delay
		binary.BigEndian.PutUint32(reply[8:], 0x00000010)  // root dispersion ~0.24 ms
		copy(reply[12:16], "TEST")
		putTime(reply[16:], rx.Add(-time.Second)) // reference time
		copy(reply[24:32], buf[40:48])            // origin = client's transmit
		putTime(reply[32:], rx)
		putTime(reply[40:], s.now())
		if _, err := s.conn.WriteToUDP(reply[:], peer); err == nil {
			s.served.Add(1)
		}
	})
}

// serveUDP hands every datagram conn receives (n bytes of buf, from peer)
// to handle, one at a time, until conn is closed; a failed read is skipped.
func serveUDP(conn *net.UDPConn, size int, handle func(buf []byte, n int, peer *net.UDPAddr)) {
	buf := make([]byte, size)
	for {
		n, peer, err := conn.ReadFromUDP(buf)
		if err != nil {
			if errors.Is(err, net.ErrClosed) {
				return
			}
			continue
		}
		handle(buf, n, peer)
	}
}

func putTime(b []byte, t time.Time) {
	secs := uint64(t.Unix() + ntpEpochOffset)
	frac := (uint64(t.Nanosecond()) << 32) / 1e9
	binary.BigEndian.PutUint64(b, secs<<32|frac)
}
