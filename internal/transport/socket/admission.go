package socket

import (
	"errors"
	"fmt"
	"log/slog"
	"math"
	"net"
	"os"
	"slices"
	"time"

	"golang.org/x/sys/unix"

	"github.com/clockwatch/clockwatch/stepdown"
)

// Admission keeps the socket usable for everyone when some clients hold many
// connections: a reserve that only privileged peers (root, clockwatch's own
// uid and stepdown.drill_uids, who run drills and diagnose) may use, and a
// share per uid for everyone else.

// reserved is how many of max_clients only privileged peers may take: a
// 64th, at most 1024 (64 of the default 4096; none below 64).
func (c Config) reserved() int { return min(c.MaxClients/64, 1024) }

// admitLocked decides whether a peer with cred may take one more connection;
// when not, it returns why, for the peer and the log.
func (s *Server) admitLocked(cr Cred, credErr error) (ok bool, why string) {
	n := len(s.clients)
	if n >= s.cfg.MaxClients {
		return false, fmt.Sprintf("too many clients (stepdown.max_clients %d)", s.cfg.MaxClients)
	}
	if s.mayDrill(cr, credErr) {
		return true, ""
	}
	if free := s.cfg.MaxClients - s.cfg.reserved(); n >= free {
		return false, fmt.Sprintf("too many clients: the last %d of stepdown.max_clients (%d) are kept for root and clockwatch's uid",
			s.cfg.reserved(), s.cfg.MaxClients)
	}
	if held := s.heldBy(limitedUID(cr, credErr)); held >= s.cfg.MaxClientsPerUID {
		return false, shareWhy(cr.UID, held)
	}
	return true, ""
}

// shareWhy is why a uid holding its share is refused.
func shareWhy(uid uint32, held int) string {
	return fmt.Sprintf("uid %d holds %d connections, stepdown.max_clients_per_uid", uid, held)
}

// limitedUID is the uid whose share a peer's connection counts against:
// peers without credentials share one.
func limitedUID(cr Cred, credErr error) uint32 {
	if credErr != nil {
		return math.MaxUint32
	}
	return cr.UID
}

// addLocked admits c: a subscriber from now on, counted against its uid's
// share unless it is privileged.
func (s *Server) addLocked(c *client) {
	s.admitted++
	c.id = s.admitted
	s.clients[c] = struct{}{}
	s.order = nil
	if !s.mayDrill(c.cred, c.credErr) {
		s.heldMu.Lock()
		s.held[limitedUID(c.cred, c.credErr)]++
		s.heldMu.Unlock()
	}
}

// heldBy returns how many connections uid holds. It takes heldMu alone,
// not mu: a refusal (thousands a second in a connect flood) never waits
// for an announcement, nor holds one back.
func (s *Server) heldBy(uid uint32) int {
	s.heldMu.Lock()
	defer s.heldMu.Unlock()
	return s.held[uid]
}

// removeLocked forgets c (once: a client may be dropped from two places).
func (s *Server) removeLocked(c *client) {
	if _, ok := s.clients[c]; !ok {
		return
	}
	delete(s.clients, c)
	s.order = nil
	if !s.mayDrill(c.cred, c.credErr) {
		uid := limitedUID(c.cred, c.credErr)
		s.heldMu.Lock()
		if s.held[uid]--; s.held[uid] <= 0 {
			delete(s.held, uid)
		}
		s.heldMu.Unlock()
	}
}

// The connection rate of each uid but the privileged ones: a uid may open
// as many connections as it may hold (stepdown.max_clients_per_uid) at
// once, then connectPerSecond a second. A token is spent by an admission
// only: a uid that holds its share and keeps trying is refused by the
// share, and one that connects once and stays, or holds many connections,
// is never slowed. A uid that connects and closes in a loop is: it would
// otherwise make the daemon greet and tear down thousands of subscribers a
// second, with the locks and CPU every other subscriber's events need
// (BenchmarkConnectFlood, docs/stepdown-protocol.md "Flow control").
const (
	connectPerSecond = 32
	// connectRateTold is how often a uid refused by its rate is told why:
	// between two, its refused connections are only closed.
	connectRateTold = time.Second
	// maxBuckets bounds the buckets kept: past it, those at least half
	// full are forgotten.
	maxBuckets = 1024
	// refusalsPerSecond bounds the accept loop's work on connections it
	// refuses, whoever makes them: past refusalBurst, the loop refuses
	// at most this many a second and the rest wait in the kernel's
	// backlog, so that a connection flood costs the daemon a few per cent
	// of a core and leaves the processors to the announcements. A new
	// connection behind a full backlog (somaxconn, 4,096) waits about a
	// second: root and clockwatch's uid have the reserved socket, which
	// no flood reaches. At 16,384 a second (a quarter of a second's
	// wait) the refusals took 16 % of a core, and a connected
	// subscriber's p50 under the floods was about twice as long, its p99
	// under all floods at once a third longer (docs/performance.md,
	// "Other local users").
	refusalsPerSecond = 4096
	refusalBurst      = 1024
)

func connectRateWhy(uid uint32, burst int) string {
	return fmt.Sprintf("uid %d connects too often (more than stepdown.max_clients_per_uid, %d, at once, then %d a second): retry later",
		uid, burst, connectPerSecond)
}

// connectRate is each uid's token bucket; only the accept loop uses it.
type connectRate struct {
	burst   float64
	buckets map[uint32]*bucket
}

func newConnectRate(burst int) connectRate {
	return connectRate{burst: float64(burst), buckets: map[uint32]*bucket{}}
}

type bucket struct {
	tokens float64
	last   time.Time
	told   time.Time
}

// has says whether uid has a token at now (spend spends it once the
// connection is admitted).
func (r *connectRate) has(uid uint32, now time.Time) bool {
	b := r.bucket(uid, now)
	if dt := now.Sub(b.last); dt > 0 {
		b.tokens = min(r.burst, b.tokens+dt.Seconds()*connectPerSecond)
	}
	b.last = now
	return b.tokens >= 1
}

// tell says whether a refusal of uid at now is told why: at most once every
// connectRateTold; the others are only closed.
func (r *connectRate) tell(uid uint32, now time.Time) bool {
	b := r.bucket(uid, now)
	if now.Sub(b.told) < connectRateTold {
		return false
	}
	b.told = now
	return true
}

// bucket is uid's, made full when it has none.
func (r *connectRate) bucket(uid uint32, now time.Time) *bucket {
	b := r.buckets[uid]
	if b == nil {
		if len(r.buckets) >= maxBuckets {
			r.forgetFull(now)
		}
		b = &bucket{tokens: r.burst, last: now}
		r.buckets[uid] = b
	}
	return b
}

// spend takes the token of an admission that check allowed.
func (r *connectRate) spend(uid uint32) {
	if b := r.buckets[uid]; b != nil {
		b.tokens--
	}
}

// forgetFull drops the buckets at least half full at now: uids that do not
// flood (forgotten, one gets half a burst more at most).
func (r *connectRate) forgetFull(now time.Time) {
	for uid, b := range r.buckets {
		if b.tokens+now.Sub(b.last).Seconds()*connectPerSecond >= r.burst/2 {
			delete(r.buckets, uid)
		}
	}
}

// drillHold turns a drill request's hold_seconds into a duration: 0 is the
// default, anything else must lie between MinDrillHold and
// stepdown.max_drill_hold (a float64 past ~292 years would overflow the
// conversion, and a hold below a millisecond would be over before a client
// saw it).
func drillHold(seconds float64, maxHold time.Duration) (time.Duration, error) {
	switch {
	case seconds == 0:
		return min(defaultDrillHold, maxHold), nil
	case math.IsNaN(seconds) || seconds < MinDrillHold.Seconds() || seconds > maxHold.Seconds():
		return 0, fmt.Errorf("hold_seconds must be between %g and %g (stepdown.max_drill_hold %s), got %g",
			MinDrillHold.Seconds(), maxHold.Seconds(), maxHold, seconds)
	}
	return time.Duration(seconds * float64(time.Second)), nil
}

// pacer spaces events out to a rate once a burst is spent. Only the accept
// loop uses it.
type pacer struct {
	every time.Duration
	burst time.Duration
	next  time.Time // when the bucket is full again, at most burst ahead
}

func newPacer(perSecond, burst int) *pacer {
	every := time.Second / time.Duration(perSecond)
	return &pacer{every: every, burst: every * time.Duration(burst)}
}

// take takes one event's token at now and returns how long to wait before
// the event: zero while the burst lasts.
func (p *pacer) take(now time.Time) time.Duration {
	if p.next.Before(now) {
		p.next = now
	}
	p.next = p.next.Add(p.every)
	return max(0, p.next.Sub(now)-p.burst)
}

// acceptLoop admits what a accepts until it is closed; when paced, its
// refusals past a burst are paced (refusalsPerSecond).
func (s *Server) acceptLoop(a *acceptor, paced bool) error {
	var backoff time.Duration
	pace := newPacer(refusalsPerSecond, refusalBurst)
	for {
		fd, err := a.accept()
		if err != nil {
			if errors.Is(err, os.ErrClosed) {
				return nil
			}
			// Out of file descriptors and the like: wait and retry
			// rather than give up on every subscriber.
			backoff = min(max(2*backoff, 5*time.Millisecond), time.Second)
			s.limit.Log(slog.LevelWarn, "accepting a stepdown client", "err", err, "retry_in", backoff)
			time.Sleep(backoff)
			continue
		}
		backoff = 0
		s.met.connections.Inc()
		if !s.admit(fd) {
			s.busy("refusing stepdown connections")
			if !paced {
				continue
			}
			if d := pace.take(time.Now()); d > 0 {
				time.Sleep(d)
			}
		}
	}
}

// allowed applies the uid/gid allow-list.
func (s *Server) allowed(cr Cred, credErr error) bool {
	if len(s.cfg.AllowUIDs) == 0 && len(s.cfg.AllowGIDs) == 0 {
		return true
	}
	if credErr != nil {
		return false
	}
	return cr.UID == 0 || slices.Contains(s.cfg.AllowUIDs, cr.UID) || slices.Contains(s.cfg.AllowGIDs, cr.GID)
}

func (s *Server) mayDrill(cr Cred, credErr error) bool {
	return credErr == nil && (cr.UID == 0 || cr.UID == s.opts.SelfUID || slices.Contains(s.cfg.DrillUIDs, cr.UID))
}

// reject tells a client why it is not served, then closes it.
func (s *Server) reject(conn *net.UnixConn, code, cause, why string) {
	b := stepdown.Message{Type: stepdown.TypeError, Code: code, Error: why}.AppendLine(nil)
	conn.SetWriteDeadline(time.Now().Add(100 * time.Millisecond))
	conn.Write(b)
	conn.Close()
	s.met.clientErrors.WithLabelValues(code).Inc()
	s.met.disconnects.WithLabelValues(cause).Inc()
}

// rejectFD is reject for a connection not yet made a *net.UnixConn: the
// line goes into the new connection's empty socket buffer without
// waiting (what does not fit is not sent).
func (s *Server) rejectFD(fd int, code, cause, why string) {
	unix.Write(fd, stepdown.Message{Type: stepdown.TypeError, Code: code, Error: why}.AppendLine(nil))
	unix.Close(fd)
	s.met.clientErrors.WithLabelValues(code).Inc()
	s.met.disconnects.WithLabelValues(cause).Inc()
}

// admit admits or refuses an accepted connection's descriptor, and says
// which. The refusals that a flood meets come first and work on the
// descriptor.
func (s *Server) admit(fd int) (admitted bool) {
	cr, credErr := s.opts.PeerCred(fd)
	if credErr != nil {
		s.limit.Log(slog.LevelWarn, "stepdown client without credentials", "err", credErr)
	}
	if !s.allowed(cr, credErr) {
		s.limit.Log(slog.LevelWarn, "stepdown client not in stepdown.allow_uids/allow_gids", "pid", cr.PID, "uid", cr.UID, "gid", cr.GID)
		s.rejectFD(fd, stepdown.CodeForbidden, CauseNotAllowed, "uid and gid not allowed by stepdown.allow_uids/allow_gids")
		return
	}
	if !s.mayDrill(cr, credErr) {
		// Before any other work: a uid that connects too often costs
		// the accept, the credentials and a close (the refusal's line
		// once a second), never a hello, goroutines or the locks the
		// events need.
		uid := limitedUID(cr, credErr)
		held := s.heldBy(uid)
		now := time.Now()
		switch {
		case held >= s.cfg.MaxClientsPerUID:
			// Refused by its share, and told so (not taken for a
			// flood), without the announcer's lock.
			why := shareWhy(cr.UID, held)
			s.limit.Log(slog.LevelWarn, "stepdown client refused", "pid", cr.PID, "uid", cr.UID, "why", why)
			s.rejectFD(fd, stepdown.CodeBusy, CauseTooManyClients, why)
			return
		case !s.rate.has(uid, now):
			if s.rate.tell(uid, now) {
				s.limit.Log(slog.LevelWarn, "stepdown client refused: its uid connects too often", "pid", cr.PID, "uid", cr.UID)
				s.rejectFD(fd, stepdown.CodeBusy, CauseConnectRate, connectRateWhy(cr.UID, s.cfg.MaxClientsPerUID))
			} else {
				unix.Close(fd)
				s.met.disconnects.WithLabelValues(CauseConnectRate).Inc()
			}
			return
		}
	}
	conn, err := fdConn(fd) // fd is closed: conn has its own
	if err != nil {
		s.limit.Log(slog.LevelWarn, "a stepdown client's connection", "err", err)
		return
	}
	// The kernel's share of a laggard's backlog, charged to this process,
	// stays a few KiB (clientSendBuffer). Failing leaves the default: more
	// memory per laggard, nothing else.
	if err := conn.SetWriteBuffer(clientSendBuffer); err != nil {
		s.limit.Log(slog.LevelWarn, "setting a stepdown client's send buffer", "err", err)
	}
	raw, err := conn.SyscallConn()
	if err != nil {
		s.limit.Log(slog.LevelWarn, "a stepdown client's connection", "err", err)
		conn.Close()
		return
	}
	var c *client
	var refuse func()
	// Under mu, which every broadcast of an announcement holds: the hello
	// says the seq of the last event sent, and every later one reaches c.
	func() {
		s.mu.Lock()
		defer s.mu.Unlock()
		if s.closed {
			refuse = func() { s.reject(conn, stepdown.CodeShuttingDown, CauseShutdown, "clockwatch is shutting down") }
			return
		}
		if ok, why := s.admitLocked(cr, credErr); !ok {
			refuse = func() {
				s.limit.Log(slog.LevelWarn, "stepdown client refused", "pid", cr.PID, "uid", cr.UID, "why", why)
				s.reject(conn, stepdown.CodeBusy, CauseTooManyClients, why)
			}
			return
		}
		c = &client{s: s, conn: conn, raw: raw, cred: cr, credErr: credErr, done: make(chan struct{}),
			tokens: floodBurst, last: time.Now()}
		c.in.init(raw, &s.readBuffers)
		s.addLocked(c)
		c.directWrite = c.writeDirect
		c.helloSeq = s.snap.Seq
		// Written at once unless the socket is full: then a writer
		// goroutine is started for it.
		c.send(s.helloLocked().AppendLine(nil))
		s.met.messagesSent.WithLabelValues(stepdown.TypeHello).Inc()
	}()
	if refuse != nil {
		refuse()
		return
	}
	if !s.mayDrill(cr, credErr) {
		s.rate.spend(limitedUID(cr, credErr))
	}
	// Its input is read once its hello is out: nothing it causes overtakes
	// the hello.
	if err := s.poller.add(c); err != nil {
		s.limit.Log(slog.LevelWarn, "stepdown client dropped: its input cannot be watched", "pid", cr.PID, "uid", cr.UID, "err", err)
		s.drop(c, CauseTooManyClients)
		return
	}
	s.log.Debug("stepdown client connected", "pid", cr.PID, "uid", cr.UID, "gid", cr.GID)
	// The heartbeat's period may be resting: its next beat is one
	// heartbeat after the hello, not one pulse.Rest.
	s.pulse.Wake()
	return true
}

// helloLocked greets a client with the state now. Besides what a lock holder
// needs, it says since when the state holds and how many clients are
// connected (this one included), for `clockwatch status`; and, when the
// state is not ok and the last announcement is of the reason holding now,
// that announcement's source and detail.
func (s *Server) helloLocked() stepdown.Message {
	snap := s.snap
	st := snap.Status
	m := stepdown.Message{Type: stepdown.TypeHello, Version: stepdown.Version, State: st.State, Epoch: st.Epoch, Seq: snap.Seq,
		Drill: st.Drill, HeartbeatSeconds: s.cfg.Heartbeat.Seconds(), HoldDownSeconds: snap.HoldDown.Seconds(),
		Since: s.since.UTC().Truncate(time.Millisecond), Subscribers: len(s.clients)}
	if st.State != stepdown.StateOK {
		m.Reason = st.Reason
		if last := snap.Last.Message; last.Seq != 0 && last.Reason == st.Reason {
			m.Source, m.Detail = last.Source, last.Detail
		}
	}
	return m
}
