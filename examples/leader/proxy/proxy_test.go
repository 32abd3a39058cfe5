package proxy

import (
	"bufio"
	"context"
	"net"
	"testing"
	"time"
)

// echo serves a line echo on loopback and returns its address.
func echo(t *testing.T) string {
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
			go func() {
				defer c.Close()
				s := bufio.NewScanner(c)
				for s.Scan() {
					if _, err := c.Write(append(s.Bytes(), '\n')); err != nil {
						return
					}
				}
			}()
		}
	}()
	return ln.Addr().String()
}

func TestPauseHoldsBytesResumeDelivers(t *testing.T) {
	t.Parallel()
	p, err := Listen("127.0.0.1:0", echo(t))
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	errc := make(chan error, 1)
	go func() { errc <- p.Run(ctx) }()
	c, err := net.Dial("tcp", p.Addr())
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	r := bufio.NewReader(c)
	roundTrip := func(msg string, wantTimeout bool) {
		t.Helper()
		if _, err := c.Write([]byte(msg + "\n")); err != nil {
			t.Fatal(err)
		}
		c.SetReadDeadline(time.Now().Add(200 * time.Millisecond))
		line, err := r.ReadString('\n')
		if wantTimeout {
			if err == nil {
				t.Fatalf("got %q through a paused proxy", line)
			}
			return
		}
		if err != nil || line != msg+"\n" {
			t.Fatalf("round trip %q: got %q, %v", msg, line, err)
		}
	}
	roundTrip("before", false)
	p.Pause()
	roundTrip("held", true)
	p.Resume()
	c.SetReadDeadline(time.Now().Add(5 * time.Second))
	if line, err := r.ReadString('\n'); err != nil || line != "held\n" {
		t.Fatalf("after resume: got %q, %v, want the held line", line, err)
	}
	roundTrip("after", false)
	cancel()
	if err := <-errc; err != nil {
		t.Fatalf("Run: %v", err)
	}
	c.SetReadDeadline(time.Now().Add(5 * time.Second))
	if _, err := r.ReadString('\n'); err == nil {
		t.Fatal("connection still open after the proxy stopped")
	}
}
