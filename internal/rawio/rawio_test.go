package rawio_test

import (
	"errors"
	"net"
	"os"
	"syscall"
	"testing"
	"time"

	"github.com/clockwatch/clockwatch/internal/rawio"
)

// pair is a UDP server on loopback and a client connected to it, the
// client as dialled (plain) and wrapped.
func pair(t *testing.T) (server *net.UDPConn, plain *net.UDPConn, raw net.Conn) {
	t.Helper()
	server, err := net.ListenUDP("udp", &net.UDPAddr{IP: net.IPv4(127, 0, 0, 1)})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { server.Close() })
	plain, err = net.DialUDP("udp", nil, server.LocalAddr().(*net.UDPAddr))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { plain.Close() })
	raw = rawio.Wrap(plain)
	if _, ok := raw.(*rawio.Conn); !ok {
		t.Fatalf("Wrap(%T) = %T, want a *rawio.Conn", plain, raw)
	}
	return server, plain, raw
}

func TestDatagrams(t *testing.T) {
	t.Parallel()
	server, _, raw := pair(t)
	for _, msg := range []string{"request", "", "another request"} {
		if n, err := raw.Write([]byte(msg)); err != nil || n != len(msg) {
			t.Fatalf("Write(%q) = %d, %v", msg, n, err)
		}
		buf := make([]byte, 64)
		server.SetReadDeadline(time.Now().Add(5 * time.Second))
		n, from, err := server.ReadFromUDP(buf)
		if err != nil || string(buf[:n]) != msg {
			t.Fatalf("the server read %q, %v; want %q", buf[:n], err, msg)
		}
		reply := "reply to " + msg
		if _, err := server.WriteToUDP([]byte(reply), from); err != nil {
			t.Fatal(err)
		}
		raw.SetReadDeadline(time.Now().Add(5 * time.Second))
		if n, err := raw.Read(buf); err != nil || string(buf[:n]) != reply {
			t.Fatalf("Read = %q, %v; want %q", buf[:n], err, reply)
		}
	}
}

// TestErrorsAsNets: the errors are those net's Read and Write return, so
// that callers' errors.Is and messages are unchanged.
func TestErrorsAsNets(t *testing.T) {
	t.Parallel()
	_, plain, raw := pair(t)
	buf := make([]byte, 64)

	// A deadline.
	raw.SetReadDeadline(time.Now().Add(20 * time.Millisecond))
	_, err := raw.Read(buf)
	var ne net.Error
	if !errors.Is(err, os.ErrDeadlineExceeded) || !errors.As(err, &ne) || !ne.Timeout() {
		t.Errorf("Read past the deadline: %v, want a timeout", err)
	}
	plain.SetReadDeadline(time.Now().Add(20 * time.Millisecond))
	_, want := plain.Read(buf)
	if err.Error() != want.Error() {
		t.Errorf("Read past the deadline: %q, net's: %q", err, want)
	}

	// Nobody listening: the write's ICMP comes back on the next read.
	gone, err := net.ListenUDP("udp", &net.UDPAddr{IP: net.IPv4(127, 0, 0, 1)})
	if err != nil {
		t.Fatal(err)
	}
	to := gone.LocalAddr().(*net.UDPAddr)
	gone.Close()
	c, err := net.DialUDP("udp", nil, to)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	rc := rawio.Wrap(c)
	rc.Write([]byte("anyone?"))
	rc.SetReadDeadline(time.Now().Add(5 * time.Second))
	if _, err := rc.Read(buf); !errors.Is(err, syscall.ECONNREFUSED) {
		t.Errorf("Read after a write to nobody: %v, want ECONNREFUSED", err)
	} else if !errors.As(err, new(*net.OpError)) {
		t.Errorf("Read after a write to nobody: %T, want a *net.OpError", err)
	}

	// Closed.
	raw.Close()
	if _, err := raw.Read(buf); !errors.Is(err, net.ErrClosed) {
		t.Errorf("Read after Close: %v, want net.ErrClosed", err)
	}
	if _, err := raw.Write([]byte("x")); !errors.Is(err, net.ErrClosed) {
		t.Errorf("Write after Close: %v, want net.ErrClosed", err)
	}
}

// TestUnixgramUnconnectedAddresses: a unix datagram socket whose peer was
// connected with a raw connect has no remote address; its errors must not
// panic on it.
func TestUnixgramUnconnectedAddresses(t *testing.T) {
	t.Parallel()
	c, err := net.ListenUnixgram("unixgram", &net.UnixAddr{Name: t.TempDir() + "/s", Net: "unixgram"})
	if err != nil {
		t.Fatal(err)
	}
	raw := rawio.Wrap(c)
	raw.SetReadDeadline(time.Now().Add(10 * time.Millisecond))
	if _, err := raw.Read(make([]byte, 8)); !errors.Is(err, os.ErrDeadlineExceeded) {
		t.Errorf("Read: %v, want a timeout", err)
	}
	raw.Close()
}

func TestWrapLeavesOthers(t *testing.T) {
	t.Parallel()
	a, b := net.Pipe()
	defer a.Close()
	defer b.Close()
	if got := rawio.Wrap(a); got != a {
		t.Errorf("Wrap(net.Pipe) = %T, want the pipe itself", got)
	}
}

// TestSpinningRead: a datagram that comes during the spin, or after it
// (the read then waits in the poller), is read whole; with nothing coming
// the read still ends at its deadline (late by at most the spin).
func TestSpinningRead(t *testing.T) {
	t.Parallel()
	server, plain, _ := pair(t)
	spin := rawio.WrapSpinning(plain, 20*time.Millisecond)
	for _, after := range []time.Duration{0, 5 * time.Millisecond, 60 * time.Millisecond} {
		go func() {
			time.Sleep(after)
			server.WriteToUDP([]byte("reply"), plain.LocalAddr().(*net.UDPAddr))
		}()
		spin.SetReadDeadline(time.Now().Add(5 * time.Second))
		buf := make([]byte, 16)
		if n, err := spin.Read(buf); err != nil || string(buf[:n]) != "reply" {
			t.Errorf("a reply %v after the read: %q, %v", after, buf[:n], err)
		}
	}
	start := time.Now()
	spin.SetReadDeadline(start.Add(5 * time.Millisecond))
	if _, err := spin.Read(make([]byte, 16)); !errors.Is(err, os.ErrDeadlineExceeded) {
		t.Errorf("nothing to read: %v, want a timeout", err)
	}
	if took := time.Since(start); took > 2*time.Second {
		t.Errorf("nothing to read with a 5 ms deadline and a 20 ms spin: took %v", took)
	}
}
