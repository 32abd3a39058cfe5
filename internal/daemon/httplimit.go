package daemon

import (
	"context"
	"net"
	"net/http"
	"sync"
	"time"

	"golang.org/x/time/rate"
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
	// httpAcceptRate and httpRequestRate pace HTTP, so that no flood of
	// connections, TLS handshakes, requests or scrapes can take the CPU
	// the stepdown announcements need (issue 32): beyond them a
	// connection waits in the kernel's backlog and a request on its
	// connection, neither costing CPU. A scraper keeps its connection
	// and asks a few times a minute; a scrape costs about 1 ms, so the
	// request rate bounds HTTP's share to a few per cent of a core.
	httpAcceptRate  = 64
	httpRequestRate = 32
	httpBurst       = 8
	// The liveness and readiness probes have their own pace, so that a
	// scrape flood cannot make a kubelet's probe (1 s timeout) fail and
	// restart the daemon, and a probe flood costs at most a few per cent
	// of a core (each answers "ok").
	httpProbeRate  = 128
	httpProbeBurst = 32
)

// connLimiter caps the connections accepted on its listeners together.
type connLimiter struct {
	max int

	accepts, requests, probes *rate.Limiter
	// busy is told when a connection or request must wait for its pace:
	// a flood (procs.Procs.Busy).
	busy func(why string)

	mu    sync.Mutex
	cond  *sync.Cond
	open  int
	idle  map[net.Conn]time.Time // as the http.Server's ConnState reports them
	fresh map[net.Conn]time.Time // accepted, no request yet
}

func newConnLimiter(max int) *connLimiter {
	l := &connLimiter{max: max, idle: map[net.Conn]time.Time{}, fresh: map[net.Conn]time.Time{},
		accepts:  rate.NewLimiter(httpAcceptRate, httpBurst),
		requests: rate.NewLimiter(httpRequestRate, httpBurst),
		probes:   rate.NewLimiter(httpProbeRate, httpProbeBurst),
		busy:     func(string) {}}
	l.cond = sync.NewCond(&l.mu)
	return l
}

// connState is the http.Server's ConnState hook: it tracks which
// connections are idle, so that one can make room at the cap.
func (l *connLimiter) connState(c net.Conn, st http.ConnState) {
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
	if ll.l.accepts.Tokens() < 1 {
		ll.l.busy("HTTP connections beyond their pace")
	}
	ll.l.accepts.Wait(context.Background()) // never fails: no deadline, burst ≥ 1
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

// paced serves a request once the limiter's request rate allows (the
// probes', for /healthz and /readyz); a request whose client leaves while
// it waits is not served.
func (l *connLimiter) paced(h http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		pace := l.requests
		if r.URL.Path == "/healthz" || r.URL.Path == "/readyz" {
			pace = l.probes
		}
		if pace.Tokens() < 1 {
			l.busy("HTTP requests beyond their pace")
		}
		if err := pace.Wait(r.Context()); err != nil {
			return
		}
		h.ServeHTTP(w, r)
	})
}

// newHTTPServer returns the server with every timeout set, the limiter's
// hook and its request pace.
func newHTTPServer(h http.Handler, l *connLimiter) *http.Server {
	return &http.Server{
		Handler:           l.paced(h),
		ReadHeaderTimeout: httpReadHeaderTimeout,
		ReadTimeout:       httpReadTimeout,
		WriteTimeout:      httpWriteTimeout,
		IdleTimeout:       httpIdleTimeout,
		MaxHeaderBytes:    16 << 10,
		ConnState:         l.connState,
	}
}
