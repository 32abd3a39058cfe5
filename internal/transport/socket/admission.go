package socket

import (
	"fmt"
	"math"
	"time"
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
	uid := limitedUID(cr, credErr)
	if held := s.held[uid]; held >= s.cfg.MaxClientsPerUID {
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
		s.held[limitedUID(c.cred, c.credErr)]++
	}
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
		if s.held[uid]--; s.held[uid] <= 0 {
			delete(s.held, uid)
		}
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
	// of a core and leaves the processors to the announcements.
	refusalsPerSecond = 16384
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
