package socket

import (
	"cmp"
	"log/slog"
	"runtime"
	"slices"
	"sync"

	"github.com/clockwatch/clockwatch/stepdown"
)

// orderLocked returns every client in the order a broadcast reaches them,
// made again only when clients came or went since the last one: the
// privileged first (root, clockwatch's uid, stepdown.drill_uids: operators
// and drills), then the others taking turns by uid, each uid's clients in
// the order they came. However many connections one uid holds, a client of
// another uid waits for at most one write per uid before its own (issue
// 32: 2,000 connections of other uids that never read put a subscriber's
// events behind up to 2,000 writes).
func (s *Server) orderLocked() []*client {
	if s.order != nil || len(s.clients) == 0 {
		return s.order
	}
	var first []*client
	byUID := map[uint32][]*client{}
	for c := range s.clients {
		if s.mayDrill(c.cred, c.credErr) {
			first = append(first, c)
			continue
		}
		uid := limitedUID(c.cred, c.credErr)
		byUID[uid] = append(byUID[uid], c)
	}
	byAge := func(a, b *client) int { return cmp.Compare(a.id, b.id) }
	slices.SortFunc(first, byAge)
	turns := make([][]*client, 0, len(byUID))
	for _, cs := range byUID {
		slices.SortFunc(cs, byAge)
		turns = append(turns, cs)
	}
	// The uid whose first client came first takes the first turn.
	slices.SortFunc(turns, func(a, b []*client) int { return byAge(a[0], b[0]) })
	order := make([]*client, 0, len(s.clients))
	order = append(order, first...)
	for i := 0; len(order) < len(s.clients); i++ {
		for _, cs := range turns {
			if i < len(cs) {
				order = append(order, cs[i])
			}
		}
	}
	s.order = order
	return order
}

// parallelFanout is the subscriber count above which a broadcast writes
// from several goroutines at once.
const parallelFanout = 256

func (s *Server) broadcastLocked(typ string, b []byte) {
	n := s.sendLocked(s.orderLocked(), b)
	s.met.messagesSent.WithLabelValues(typ).Add(float64(n))
}

// sendLocked writes b to every client of all, in their order (from several
// goroutines, each taking every workers-th client from the front, when
// there are many), drops those too far behind to take it, and returns how
// many took it.
func (s *Server) sendLocked(all []*client, b []byte) int {
	workers := 1
	if len(all) > parallelFanout {
		workers = min(runtime.GOMAXPROCS(0), len(all)/parallelFanout+1)
	}
	lagged := make([][]*client, workers)
	var wg sync.WaitGroup
	send := func(w int) {
		for i := w; i < len(all); i += workers {
			if c := all[i]; !c.send(b) {
				lagged[w] = append(lagged[w], c)
			}
		}
	}
	for w := 1; w < workers; w++ {
		wg.Go(func() { send(w) })
	}
	// The first stripe, which the front of the order heads, on this
	// goroutine: a new goroutine waits for a processor.
	send(0)
	wg.Wait()
	n := len(all)
	for _, l := range lagged {
		for _, c := range l {
			n--
			s.removeLocked(c)
			c.shutdown(CauseLaggard)
			s.limit.Log(slog.LevelWarn, "stepdown client fell behind: disconnected", "pid", c.cred.PID, "uid", c.cred.UID, "queue_size", s.cfg.QueueSize)
		}
	}
	return n
}

// heartbeat ticks the announcer (whose clock may be a test's, without a
// timer of its own), then tells every client the state it was last told:
// a heartbeat's seq is the last event sent before it.
func (s *Server) heartbeat() {
	s.ann.Tick()
	s.mu.Lock()
	st := s.snap.Status
	seq := s.snap.Seq
	m := stepdown.Message{Type: stepdown.TypeHeartbeat, State: st.State, Epoch: st.Epoch, Seq: seq, Drill: st.Drill}
	if st.State != stepdown.StateOK {
		m.Reason = st.Reason
	}
	b := m.AppendLine(nil)
	all := s.orderLocked()
	// In slices, letting go of the lock between them: an announcement
	// waits for one slice, not for the whole heartbeat. One that goes out
	// meanwhile ends the heartbeat (those not yet told hear the event,
	// which is newer; a heartbeat after it would carry an older seq).
	n := 0
	for i := 0; ; {
		n += s.sendLocked(all[i:min(i+heartbeatSlice, len(all))], b)
		if i += heartbeatSlice; i >= len(all) {
			break
		}
		s.mu.Unlock()
		if s.announcing.Load() > 0 {
			// Its announcement goes to every client: the rest of
			// this heartbeat would only come after it.
			s.mu.Lock()
			break
		}
		s.mu.Lock()
		if s.snap.Seq != seq || s.closed {
			break
		}
	}
	s.mu.Unlock()
	s.met.messagesSent.WithLabelValues(stepdown.TypeHeartbeat).Add(float64(n))
}

// heartbeatSlice is how many clients a heartbeat tells per hold of the
// lock announcements take.
const heartbeatSlice = 256
