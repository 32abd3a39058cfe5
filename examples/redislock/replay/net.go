package replay

import (
	"context"
	"fmt"
	"net"
	"sync"
	"time"
)

// Net is the network as the workers see it: which Redis and Sentinel
// addresses each worker can reach. The Sentinels watch the master through a
// proxy and announce it at that proxy's address; the workers reach the
// master directly (an alias), so that cutting the Sentinels off the master
// does not cut off a worker on the master's side of a partition.
type Net struct {
	mu      sync.Mutex
	alias   map[string]string
	blocked map[string]map[string]bool       // worker → address → blocked
	conns   map[string]map[*trackedConn]bool // worker → its open connections
}

// NewNet returns a network where every worker reaches every address.
func NewNet() *Net {
	return &Net{alias: map[string]string{}, blocked: map[string]map[string]bool{}, conns: map[string]map[*trackedConn]bool{}}
}

// Alias makes workers dial to when they are asked for from.
func (n *Net) Alias(from, to string) {
	n.mu.Lock()
	defer n.mu.Unlock()
	n.alias[from] = to
}

// Dialer is worker's dialer, for redis.FailoverOptions.Dialer (which go-redis
// uses for the Sentinels too).
func (n *Net) Dialer(worker string) func(ctx context.Context, network, addr string) (net.Conn, error) {
	return func(ctx context.Context, network, addr string) (net.Conn, error) {
		n.mu.Lock()
		if to, ok := n.alias[addr]; ok {
			addr = to
		}
		blocked := n.blocked[worker][addr]
		n.mu.Unlock()
		if blocked {
			return nil, fmt.Errorf("dial %s: unreachable from %s (partition)", addr, worker)
		}
		d := net.Dialer{Timeout: time.Second}
		c, err := d.DialContext(ctx, network, addr)
		if err != nil {
			return nil, err
		}
		tc := &trackedConn{Conn: c, addr: addr}
		tc.forget = func() { n.forget(worker, tc) }
		n.mu.Lock()
		if n.blocked[worker][addr] {
			n.mu.Unlock()
			c.Close()
			return nil, fmt.Errorf("dial %s: unreachable from %s (partition)", addr, worker)
		}
		if n.conns[worker] == nil {
			n.conns[worker] = map[*trackedConn]bool{}
		}
		n.conns[worker][tc] = true
		n.mu.Unlock()
		return tc, nil
	}
}

// Block makes addrs unreachable from worker: its connections to them close
// (as its timeouts would close them in a real partition) and new ones fail.
func (n *Net) Block(worker string, addrs ...string) {
	n.mu.Lock()
	if n.blocked[worker] == nil {
		n.blocked[worker] = map[string]bool{}
	}
	var closing []*trackedConn
	for _, a := range addrs {
		n.blocked[worker][a] = true
		for c := range n.conns[worker] {
			if c.addr == a {
				closing = append(closing, c)
			}
		}
	}
	n.mu.Unlock()
	for _, c := range closing {
		c.Close()
	}
}

func (n *Net) forget(worker string, c *trackedConn) {
	n.mu.Lock()
	defer n.mu.Unlock()
	delete(n.conns[worker], c)
}

type trackedConn struct {
	net.Conn
	addr   string
	once   sync.Once
	forget func()
}

func (c *trackedConn) Close() error {
	c.once.Do(c.forget)
	return c.Conn.Close()
}
