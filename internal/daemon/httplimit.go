package daemon

import (
	"net"
	"net/http"
	"sync"
	"time"
)

// HTTP limits. Each phase of a request has a timeout, so a slow or silent
// client cannot hold a connection, and connections are capped so that HTTP
// can never take the file descriptors the stepdown socket's subscribers need
// (issue 16: 1,100 idle keep-alive connections exhausted them).
const (
	httpReadHeaderTimeout = 10 * time.Second
	httpReadTimeout       = 30 * time.Second
	// httpWriteTimeout bounds a response: a scrape takes milliseconds,
	// and no endpoint streams (pprof is not served).
	httpWriteTimeout = 30 * time.Second
	// httpIdleTimeout closes a keep-alive connection nobody uses; longer
	// than the usual 15 s scrape interval so that a scraper keeps its one.
	httpIdleTimeout = 2 * time.Minute
	// maxHTTPConns caps the HTTP connections open at once. At the cap, a
	// new connection first takes the place of an idle keep-alive one
	// (which its client reopens), else waits in the kernel's backlog
	// without a file descriptor.
	maxHTTPConns = 256
)

// connLimiter caps the connections accepted on its listeners together.
type connLimiter struct {
	max int

	mu   sync.Mutex
	cond *sync.Cond
	open int
	idle map[net.Conn]time.Time // as the http.Server's ConnState reports them
}

func newConnLimiter(max int) *connLimiter {
	l := &connLimiter{max: max, idle: map[net.Conn]time.Time{}}
	l.cond = sync.NewCond(&l.mu)
	return l
}

// connState is the http.Server's ConnState hook: it tracks which
// connections are idle, so that one can make room at the cap.
func (l *connLimiter) connState(c net.Conn, st http.ConnState) {
	l.mu.Lock()
	defer l.mu.Unlock()
	if st == http.StateIdle {
		l.idle[c] = time.Now()
	} else {
		delete(l.idle, c)
	}
}

// acquire takes a slot, closing the longest idle connection when at the cap
// and waiting when none is idle.
func (l *connLimiter) acquire() {
	l.mu.Lock()
	defer l.mu.Unlock()
	for l.open >= l.max {
		var oldest net.Conn
		var since time.Time
		for c, t := range l.idle {
			if oldest == nil || t.Before(since) {
				oldest, since = c, t
			}
		}
		if oldest != nil {
			delete(l.idle, oldest)
			l.mu.Unlock()
			oldest.Close() // releases its slot
			l.mu.Lock()
			continue
		}
		l.cond.Wait()
	}
	l.open++
}

func (l *connLimiter) release() {
	l.mu.Lock()
	l.open--
	l.mu.Unlock()
	l.cond.Signal()
}

// Open returns the number of connections open now.
func (l *connLimiter) Open() int {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.open
}

func (l *connLimiter) wrap(ln net.Listener) net.Listener { return &limitedListener{Listener: ln, l: l} }

type limitedListener struct {
	net.Listener
	l *connLimiter
}

func (ll *limitedListener) Accept() (net.Conn, error) {
	ll.l.acquire()
	c, err := ll.Listener.Accept()
	if err != nil {
		ll.l.release()
		return nil, err
	}
	return &limitedConn{Conn: c, l: ll.l}, nil
}

type limitedConn struct {
	net.Conn
	l    *connLimiter
	once sync.Once
}

func (c *limitedConn) Close() error {
	err := c.Conn.Close()
	c.once.Do(c.l.release)
	return err
}

// newHTTPServer returns the server with every timeout set and the limiter's
// hook.
func newHTTPServer(h http.Handler, l *connLimiter) *http.Server {
	return &http.Server{
		Handler:           h,
		ReadHeaderTimeout: httpReadHeaderTimeout,
		ReadTimeout:       httpReadTimeout,
		WriteTimeout:      httpWriteTimeout,
		IdleTimeout:       httpIdleTimeout,
		MaxHeaderBytes:    16 << 10,
		ConnState:         l.connState,
	}
}
