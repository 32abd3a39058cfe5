package daemon

import (
	"bytes"
	"context"
	"net"
	"net/http"
	"strconv"
	"sync"
	"time"

	"github.com/clockwatch/clockwatch/internal/lane"
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
	// new connection takes the place of an idle keep-alive one (which its
	// client reopens), else of one that has sent nothing for
	// httpSilentGrace, else waits in the kernel's backlog without a file
	// descriptor.
	maxHTTPConns    = 256
	httpSilentGrace = time.Second
)

// connLimiter caps the connections accepted on its listeners together.
type connLimiter struct {
	max  int
	lane *lane.Lane // the fresh connections' turns; nil: none

	mu    sync.Mutex
	cond  *sync.Cond
	open  int
	idle  map[net.Conn]time.Time // as the http.Server's ConnState reports them
	fresh map[net.Conn]time.Time // accepted, no request yet
}

func newConnLimiter(max int, ln *lane.Lane) *connLimiter {
	l := &connLimiter{max: max, lane: ln, idle: map[net.Conn]time.Time{}, fresh: map[net.Conn]time.Time{}}
	l.cond = sync.NewCond(&l.mu)
	return l
}

// connState is the http.Server's ConnState hook: it tracks which
// connections are idle, so that one can make room at the cap.
func (l *connLimiter) connState(c net.Conn, st http.ConnState) {
	if st != http.StateNew {
		if lc := underlying(c); lc != nil {
			lc.settle()
		}
	}
	l.mu.Lock()
	defer l.mu.Unlock()
	delete(l.idle, c)
	delete(l.fresh, c)
	switch st {
	case http.StateIdle:
		l.idle[c] = time.Now()
	case http.StateNew:
		l.fresh[c] = time.Now()
	}
}

// acquire takes a slot. At the cap it closes the longest idle connection,
// else the oldest one silent for httpSilentGrace, else waits.
func (l *connLimiter) acquire() {
	l.mu.Lock()
	defer l.mu.Unlock()
	for l.open >= l.max {
		victim, from := oldest(l.idle, time.Now()), l.idle
		if victim == nil {
			victim, from = oldest(l.fresh, time.Now().Add(-httpSilentGrace)), l.fresh
		}
		if victim != nil {
			delete(from, victim)
			l.mu.Unlock()
			victim.Close() // releases its slot
			l.mu.Lock()
			continue
		}
		if len(l.fresh) > 0 {
			// One may fall silent long enough: look again soon.
			l.mu.Unlock()
			time.Sleep(httpSilentGrace / 10)
			l.mu.Lock()
			continue
		}
		l.cond.Wait()
	}
	l.open++
}

// oldest returns the connection with the earliest time not after before.
func oldest(m map[net.Conn]time.Time, before time.Time) net.Conn {
	var c net.Conn
	var at time.Time
	for k, t := range m {
		if !t.After(before) && (c == nil || t.Before(at)) {
			c, at = k, t
		}
	}
	return c
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
	lc := &limitedConn{Conn: c, l: ll.l, fresh: ll.l.lane != nil}
	lc.ctx, lc.cancel = context.WithCancel(context.Background())
	return lc, nil
}

// limitedConn is an accepted connection. Until its first request is read
// (while fresh: the TLS handshake and the request's header), the work its
// goroutine does on what it reads is done in turns of the daemon's lane: a
// turn taken when a read returns data, given back when the goroutine next
// reads or writes (waits on the client). A flood of handshakes then costs at
// most the lane's share of the CPU; a client that sends slowly holds no
// turn.
type limitedConn struct {
	net.Conn
	l      *connLimiter
	once   sync.Once
	ctx    context.Context // ends at Close: a turn waited for is not taken
	cancel context.CancelFunc

	mu    sync.Mutex
	fresh bool
	turn  lane.Turn
}

func (c *limitedConn) Read(p []byte) (int, error) {
	c.pause()
	n, err := c.Conn.Read(p)
	if n > 0 {
		c.work()
	}
	return n, err
}

func (c *limitedConn) Write(p []byte) (int, error) {
	c.pause()
	return c.Conn.Write(p)
}

// pause gives the turn back, if the connection holds one.
func (c *limitedConn) pause() {
	c.mu.Lock()
	t := c.turn
	c.turn = lane.Turn{}
	c.mu.Unlock()
	t.Done()
}

// work waits for a turn while the connection is fresh.
func (c *limitedConn) work() {
	c.mu.Lock()
	fresh := c.fresh
	c.mu.Unlock()
	if !fresh {
		return
	}
	t, err := c.l.lane.Acquire(c.ctx, laneHTTP)
	if err != nil {
		return
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	if !c.fresh {
		t.Done()
		return
	}
	c.turn.Done() // never two turns at once
	c.turn = t
}

// settle ends the fresh phase: the request's handler takes turns of its own
// (laned).
func (c *limitedConn) settle() {
	c.mu.Lock()
	c.fresh = false
	t := c.turn
	c.turn = lane.Turn{}
	c.mu.Unlock()
	t.Done()
}

func (c *limitedConn) Close() error {
	err := c.Conn.Close()
	if c.cancel != nil {
		c.cancel()
	}
	c.settle()
	c.once.Do(c.l.release)
	return err
}

// underlying returns the limitedConn under c (a TLS connection's own), if
// any.
func underlying(c net.Conn) *limitedConn {
	for {
		switch v := c.(type) {
		case *limitedConn:
			return v
		case interface{ NetConn() net.Conn }:
			c = v.NetConn()
		default:
			return nil
		}
	}
}

// laned runs each request's handler (everything the server does for it,
// basic auth included) in a turn of the lane, into a buffer, and writes the
// response after the turn: a client that reads slowly holds no turn, and a
// flood of requests takes at most the lane's share of the CPU. Responses
// here are small (a scrape is tens of kB).
func laned(l *lane.Lane, h http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		rec := &bufferedResponse{header: http.Header{}}
		if err := l.Do(r.Context(), laneHTTP, func() { h.ServeHTTP(rec, r) }); err != nil {
			return // the client went away while it waited
		}
		dst := w.Header()
		for k, v := range rec.header {
			dst[k] = v
		}
		if rec.status == 0 {
			rec.status = http.StatusOK
		}
		if dst.Get("Content-Length") == "" && dst.Get("Transfer-Encoding") == "" && bodyAllowed(rec.status) {
			dst.Set("Content-Length", strconv.Itoa(rec.body.Len()))
		}
		w.WriteHeader(rec.status)
		w.Write(rec.body.Bytes())
	})
}

// bodyAllowed reports whether a response with this status has a body.
func bodyAllowed(status int) bool {
	return status >= 200 && status != http.StatusNoContent && status != http.StatusNotModified
}

// bufferedResponse is a response kept in memory.
type bufferedResponse struct {
	header http.Header
	status int
	body   bytes.Buffer
}

func (b *bufferedResponse) Header() http.Header { return b.header }

func (b *bufferedResponse) WriteHeader(code int) {
	if b.status == 0 {
		b.status = code
	}
}

func (b *bufferedResponse) Write(p []byte) (int, error) {
	if b.status == 0 {
		b.status = http.StatusOK
	}
	return b.body.Write(p)
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
