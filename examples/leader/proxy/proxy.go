package proxy

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"sync"
)

// Proxy forwards connections from its listener to a target address.
type Proxy struct {
	ln     net.Listener
	target string

	mu     sync.Mutex
	open   chan struct{} // closed while forwarding; replaced by Pause
	paused bool
	closed bool
	conns  map[net.Conn]struct{}
}

// Listen starts a proxy on addr (e.g. "127.0.0.1:0") that forwards to target.
// Serve must run for it to accept.
func Listen(addr, target string) (*Proxy, error) {
	ln, err := net.Listen("tcp", addr)
	if err != nil {
		return nil, fmt.Errorf("proxy listening on %s: %w", addr, err)
	}
	open := make(chan struct{})
	close(open)
	return &Proxy{ln: ln, target: target, open: open, conns: map[net.Conn]struct{}{}}, nil
}

// Addr is the address clients connect to.
func (p *Proxy) Addr() string { return p.ln.Addr().String() }

// Pause stops forwarding: bytes wait, connections stay open.
func (p *Proxy) Pause() {
	p.mu.Lock()
	defer p.mu.Unlock()
	if !p.paused {
		p.paused = true
		p.open = make(chan struct{})
	}
}

// Resume forwards again, held bytes first.
func (p *Proxy) Resume() {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.paused {
		p.paused = false
		close(p.open)
	}
}

// Run accepts and forwards until ctx is done, then closes every connection.
func (p *Proxy) Run(ctx context.Context) error {
	var wg sync.WaitGroup
	stop := context.AfterFunc(ctx, func() {
		p.ln.Close()
		p.Resume() // unblock the copiers so they see their connections closed
		p.mu.Lock()
		p.closed = true
		for c := range p.conns {
			c.Close()
		}
		p.mu.Unlock()
	})
	defer stop()
	defer wg.Wait()
	for {
		c, err := p.ln.Accept()
		if err != nil {
			if ctx.Err() != nil {
				return nil
			}
			return fmt.Errorf("proxy accepting: %w", err)
		}
		wg.Add(1)
		go func() {
			defer wg.Done()
			p.forward(ctx, c)
		}()
	}
}

// track registers a connection to close when the proxy stops; after that it
// closes the connection at once.
func (p *Proxy) track(c net.Conn) {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.closed {
		c.Close()
		return
	}
	p.conns[c] = struct{}{}
}

func (p *Proxy) untrack(c net.Conn) {
	p.mu.Lock()
	defer p.mu.Unlock()
	delete(p.conns, c)
	c.Close()
}

func (p *Proxy) forward(ctx context.Context, client net.Conn) {
	var d net.Dialer
	server, err := d.DialContext(ctx, "tcp", p.target)
	if err != nil {
		client.Close()
		return
	}
	p.track(client)
	p.track(server)
	defer p.untrack(client)
	defer p.untrack(server)
	done := make(chan struct{}, 2)
	go func() { p.copy(server, client); done <- struct{}{} }()
	go func() { p.copy(client, server); done <- struct{}{} }()
	<-done // either side closing ends both
}

// copy moves bytes from src to dst, waiting while the proxy is paused.
func (p *Proxy) copy(dst, src net.Conn) {
	defer dst.Close()
	buf := make([]byte, 32<<10)
	for {
		n, err := src.Read(buf)
		if n > 0 {
			p.mu.Lock()
			open := p.open
			p.mu.Unlock()
			<-open
			if _, werr := dst.Write(buf[:n]); werr != nil {
				return
			}
		}
		if err != nil {
			if !errors.Is(err, io.EOF) {
				src.Close()
			}
			return
		}
	}
}
