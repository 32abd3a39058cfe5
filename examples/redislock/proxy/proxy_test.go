package proxy

import (
	"bufio"
	"context"
	"errors"
	"io"
	"net"
	"os"
	"testing"
	"time"
)

// echoServer answers every line with itself.
func echoServer(t *testing.T) string {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { ln.Close() })
	go func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			go func() { defer c.Close(); io.Copy(c, c) }()
		}
	}()
	return ln.Addr().String()
}

func startProxy(t *testing.T) *Proxy {
	t.Helper()
	p, err := Listen("127.0.0.1:0", echoServer(t))
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- p.Run(ctx) }()
	t.Cleanup(func() {
		cancel()
		if err := <-done; err != nil {
			t.Error(err)
		}
	})
	return p
}

func dial(t *testing.T, p *Proxy) (net.Conn, *bufio.Reader) {
	t.Helper()
	c, err := net.Dial("tcp", p.Addr())
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { c.Close() })
	return c, bufio.NewReader(c)
}

// roundTrip sends a line and reads the echo within d.
func roundTrip(c net.Conn, r *bufio.Reader, line string, d time.Duration) (string, error) {
	c.SetDeadline(time.Now().Add(d))
	if _, err := io.WriteString(c, line+"\n"); err != nil {
		return "", err
	}
	got, err := r.ReadString('\n')
	return got, err
}

func TestFreezeHoldsAndForwardingDelivers(t *testing.T) {
	t.Parallel()
	p := startProxy(t)
	c, r := dial(t, p)
	if got, err := roundTrip(c, r, "one", 5*time.Second); err != nil || got != "one\n" {
		t.Fatalf("forwarding: got %q, %v", got, err)
	}
	p.Set(Frozen)
	if got, err := roundTrip(c, r, "two", 200*time.Millisecond); !errors.Is(err, os.ErrDeadlineExceeded) {
		t.Fatalf("frozen: got %q, %v; want nothing before the deadline", got, err)
	}
	p.Set(Forwarding)
	c.SetDeadline(time.Now().Add(5 * time.Second))
	if got, err := r.ReadString('\n'); err != nil || got != "two\n" {
		t.Fatalf("after the thaw: got %q, %v; want the held line", got, err)
	}
}

func TestCutDropsHeldBytesAndRefuses(t *testing.T) {
	t.Parallel()
	p := startProxy(t)
	c, r := dial(t, p)
	if _, err := roundTrip(c, r, "one", 5*time.Second); err != nil {
		t.Fatal(err)
	}
	p.Set(Frozen)
	if _, err := roundTrip(c, r, "held", 200*time.Millisecond); !errors.Is(err, os.ErrDeadlineExceeded) {
		t.Fatalf("frozen: %v", err)
	}
	p.Set(Cut)
	c.SetDeadline(time.Now().Add(5 * time.Second))
	if got, err := r.ReadString('\n'); err == nil || got != "" {
		t.Fatalf("after the cut: got %q, %v; want the connection closed and the held line lost", got, err)
	}
	c2, r2 := dial(t, p)
	if got, err := roundTrip(c2, r2, "new", 5*time.Second); err == nil {
		t.Fatalf("a connection made while cut echoed %q", got)
	}
	p.Set(Forwarding)
	c3, r3 := dial(t, p)
	if got, err := roundTrip(c3, r3, "again", 5*time.Second); err != nil || got != "again\n" {
		t.Fatalf("forwarding again: got %q, %v", got, err)
	}
	if s := p.State(); s != Forwarding {
		t.Errorf("state %s, want forwarding", s)
	}
}
