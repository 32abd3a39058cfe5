package peers

import (
	"encoding/binary"
	"fmt"
	"net"
	"net/netip"
	"time"

	"golang.org/x/sys/unix"
)

// udpConn is the real PacketConn: a UDP socket whose datagrams carry the
// kernel's receive time (SO_TIMESTAMPNS), so that a reply's receive
// timestamp does not include the wait for this goroutine to be scheduled.
type udpConn struct {
	*net.UDPConn
	oob []byte
}

var _ PacketConn = (*udpConn)(nil)

// ListenUDP opens the responder's socket on addr ("host:port").
func ListenUDP(addr string) (PacketConn, error) {
	c, err := net.ListenPacket("udp", addr)
	if err != nil {
		return nil, fmt.Errorf("peers.listen %s: %w", addr, err)
	}
	uc := c.(*net.UDPConn)
	raw, err := uc.SyscallConn()
	if err != nil {
		uc.Close()
		return nil, fmt.Errorf("peers.listen %s: %w", addr, err)
	}
	var serr error
	if err := raw.Control(func(fd uintptr) {
		serr = unix.SetsockoptInt(int(fd), unix.SOL_SOCKET, unix.SO_TIMESTAMPNS, 1)
	}); err != nil || serr != nil {
		uc.Close()
		return nil, fmt.Errorf("peers.listen %s: SO_TIMESTAMPNS: %v %v", addr, err, serr)
	}
	return &udpConn{UDPConn: uc, oob: make([]byte, 128)}, nil
}

// ReadFrom implements PacketConn.
func (c *udpConn) ReadFrom(b []byte) (int, netip.AddrPort, time.Time, error) {
	n, oobn, _, from, err := c.ReadMsgUDPAddrPort(b, c.oob)
	if err != nil {
		return 0, netip.AddrPort{}, time.Time{}, err
	}
	rx := time.Now()
	if msgs, err := unix.ParseSocketControlMessage(c.oob[:oobn]); err == nil {
		for _, m := range msgs {
			if m.Header.Level == unix.SOL_SOCKET && m.Header.Type == unix.SO_TIMESTAMPNS && len(m.Data) >= 16 {
				rx = time.Unix(int64(binary.NativeEndian.Uint64(m.Data)), int64(binary.NativeEndian.Uint64(m.Data[8:])))
			}
		}
	}
	return n, netip.AddrPortFrom(from.Addr().Unmap(), from.Port()), rx, nil
}

// WriteTo implements PacketConn.
func (c *udpConn) WriteTo(b []byte, to netip.AddrPort) (int, error) {
	return c.WriteToUDPAddrPort(b, to)
}
