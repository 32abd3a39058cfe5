package proxy

import (
	"context"
	"fmt"
	"net"
	"sync"
)

// State is what a proxy does with the bytes it reads.
type State int

const (
	// Forwarding passes bytes on at once.
	Forwarding State = iota
	// Frozen holds them; connections stay open.
	Frozen
	// Cut drops them and refuses connections.
	Cut
)

func (s State) String() string {
	switch s {
	case Forwarding:
		return "forwarding"
	case Frozen:
		return "frozen"
	case Cut:
		return "cut"
	}
	return fmt.Sprintf("State(%d)", int(s))
}

// Proxy forwards connections from its listener to a target address.
type Proxy struct {
	ln     net.Listener
	target string

	mu      sync.Mutex
	state   State
	changed chan struct{} // closed, and replaced, at every change of state
	stopped bool
	conns   map[net.Conn]struct{}
}

// Listen starts a proxy on addr (e.g. "127.0.0.1:0") that forwards to
// target. Run must run for it to accept.
func Listen(addr, target string) (*Proxy, error) {
	ln, err := net.Listen("tcp", addr)
	if err != nil {
		return nil, fmt.Errorf("proxy listening on %s: %w", addr, err)
	}
	return &Proxy{ln: ln, target: target, changed: make(chan struct{}), conns: map[net.Conn]struct{}{}}, nil
}

// Addr is the address clients connect to.
func (p *Proxy) Addr() string { return p.ln.Addr().String() }

// State says what the proxy does now.
func (p *Proxy) State() State {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.state
}

// Set changes what the proxy does: Forwarding delivers held bytes first;
// Cut closes every connection without delivering what it holds, and closes
// new connections at once until the state changes again.
func (p *Proxy) Set(s State) {
	p.mu.Lock()
	defer p.mu.Unlock()
	if s == p.state {
		return
	}
	p.state = s
	close(p.changed)
	p.changed = make(chan struct{})
	if s == Cut {
		for c := range p.conns {
			c.Close()
		}
	}
}

// Run accepts and forwards until ctx is done, then closes every connection.
func (p *Proxy) Run(ctx context.Context) error {
	var wg sync.WaitGroup
	stop := context.AfterFunc(ctx, func() {
		p.ln.Close()
		p.mu.Lock()
		p.stopped = true
		p.mu.Unlock()
		p.Set(Cut)
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

// track registers a connection to close on Cut; it reports false, and
// closes the connection, when the proxy is cut or stopped.
func (p *Proxy) track(c net.Conn) bool {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.stopped || p.state == Cut {
		c.Close()
		return false
	}
	p.conns[c] = struct{}{}
	return true
}

func (p *Proxy) untrack(c net.Conn) {
	p.mu.Lock()
	defer p.mu.Unlock()
	delete(p.conns, c)
	c.Close()
}

func (p *Proxy) forward(ctx context.Context, client net.Conn) {
	if !p.track(client) {
		return
	}
	defer p.untrack(client)
	var d net.Dialer
	server, err := d.DialContext(ctx, "tcp", p.target)
	if err != nil {
		return
	}
	if !p.track(server) {
		return
	}
	defer p.untrack(server)
	done := make(chan struct{}, 2)
	go func() { p.copy(server, client); done <- struct{}{} }()
	go func() { p.copy(client, server); done <- struct{}{} }()
	<-done // either side closing ends both
}

// pass waits while the proxy is frozen; it reports whether to deliver.
func (p *Proxy) pass() bool {
	for {
		p.mu.Lock()
		s, changed := p.state, p.changed
		p.mu.Unlock()
		switch s {
		case Forwarding:
			return true
		case Cut:
			return false
		}
		<-changed
	}
}

// copy moves bytes from src to dst, holding them while the proxy is frozen
// and dropping them when it is cut.
func (p *Proxy) copy(dst, src net.Conn) {
	defer dst.Close()
	defer src.Close()
	buf := make([]byte, 32<<10)
	for {
		n, err := src.Read(buf)
		if n > 0 {
			if !p.pass() {
				return
			}
			if _, werr := dst.Write(buf[:n]); werr != nil {
				return
			}
		}
		if err != nil {
			return
		}
	}
}
