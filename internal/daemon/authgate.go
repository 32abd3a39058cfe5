package daemon

import (
	"crypto/sha256"
	"net"
	"net/http"
	"sync"
	"time"
)

// Basic-auth checks. exporter-toolkit caches the outcome of each
// (user, password) pair, but a wrong password it has not seen costs a full
// bcrypt comparison (tens of ms of CPU at the usual cost 10). Its own mutex
// already runs one comparison at a time, so a flood of wrong passwords keeps
// exactly one bcrypt running back to back: with --runtime.gomaxprocs=1 every
// hand-off on the event path then waits for the running comparison's time
// slice (issue 25: a drill's delivery went from 0.2 ms to 20 ms p50). A
// concurrency cap alone would not change that, so the gate also keeps its
// slot, after a refused check, for authHoldFactor times the check's duration:
// unknown credentials get at most 1/(1+authHoldFactor) of a core.
const (
	authSlots      = 1
	authHoldFactor = 3
	// authSlotWait is how long a request with unknown credentials waits for
	// a slot before it is answered 429: long enough for a few checks, short
	// enough that a flood's requests do not pile up for the write timeout.
	authSlotWait = 250 * time.Millisecond
	// authKnownMax bounds the credentials remembered as good (a scraper
	// has one; rotation adds a second).
	authKnownMax = 16
)

// authGate stands in front of exporter-toolkit's basic-auth handler.
// Credentials the handler accepted before skip the gate: the toolkit answers
// them from its cache without bcrypt, so a legitimate scraper is not refused
// during a flood.
type authGate struct {
	slots chan struct{}
	wait  time.Duration
	hold  int // multiple of a refused check's duration the slot is kept
	// busy is told of each refused check (procs.Procs.Busy).
	busy func(why string)

	mu    sync.Mutex
	known map[[sha256.Size]byte]struct{}
}

func newAuthGate(slots int, wait time.Duration, hold int) *authGate {
	return &authGate{slots: make(chan struct{}, slots), wait: wait, hold: hold,
		known: map[[sha256.Size]byte]struct{}{}, busy: func(string) {}}
}

// in returns a handler that sends next's requests through the gate's slots
// and memory of good credentials (shared by every server).
func (g *authGate) in(next http.Handler) http.Handler {
	return &gatedHandler{g: g, next: next}
}

type gatedHandler struct {
	g    *authGate
	next http.Handler
}

func (h *gatedHandler) ServeHTTP(w http.ResponseWriter, r *http.Request) { h.g.serve(h.next, w, r) }

func (g *authGate) serve(next http.Handler, w http.ResponseWriter, r *http.Request) {
	authz := r.Header.Get("Authorization")
	if authz == "" {
		// No credentials: the toolkit answers 401 (or serves, with no
		// users configured) without bcrypt.
		next.ServeHTTP(w, r)
		return
	}
	key := sha256.Sum256([]byte(authz))
	g.mu.Lock()
	_, good := g.known[key]
	g.mu.Unlock()
	if good {
		next.ServeHTTP(w, r)
		return
	}
	t := time.NewTimer(g.wait)
	select {
	case g.slots <- struct{}{}:
		t.Stop()
	case <-t.C:
		w.Header().Set("Retry-After", "1")
		http.Error(w, "too many authentication attempts at once", http.StatusTooManyRequests)
		return
	case <-r.Context().Done():
		t.Stop()
		return
	}
	start := time.Now()
	sw := &statusWriter{ResponseWriter: w}
	next.ServeHTTP(sw, r)
	if sw.status == http.StatusUnauthorized {
		g.busy("basic-auth checks of unknown credentials")
		// Answer now; keep the slot so that the comparisons' duty cycle
		// stays low.
		time.AfterFunc(time.Duration(g.hold)*time.Since(start), func() { <-g.slots })
		return
	}
	<-g.slots
	if sw.status < 400 || sw.status >= 500 {
		g.mu.Lock()
		if len(g.known) >= authKnownMax {
			clear(g.known)
		}
		g.known[key] = struct{}{}
		g.mu.Unlock()
	}
}

// statusWriter records the status a handler answered with.
type statusWriter struct {
	http.ResponseWriter
	status int
}

func (s *statusWriter) WriteHeader(code int) {
	if s.status == 0 {
		s.status = code
	}
	s.ResponseWriter.WriteHeader(code)
}

func (s *statusWriter) Write(b []byte) (int, error) {
	if s.status == 0 {
		s.status = http.StatusOK
	}
	return s.ResponseWriter.Write(b)
}

// Unwrap lets http.ResponseController reach the connection.
func (s *statusWriter) Unwrap() http.ResponseWriter { return s.ResponseWriter }

// gatedListener installs the gate in front of whatever handler its server
// has when the listener first accepts: exporter-toolkit's Serve replaces the
// server's Handler with its auth handler just before it starts accepting,
// and offers no other way in front of it. Accept runs on the goroutine that
// starts each connection's goroutine, so every connection sees the write.
type gatedListener struct {
	net.Listener
	once    sync.Once
	install func()
}

func (l *gatedListener) Accept() (net.Conn, error) {
	l.once.Do(l.install)
	return l.Listener.Accept()
}
