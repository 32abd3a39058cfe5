package socket

import (
	"cmp"
	"log/slog"
	"slices"

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
	if s.order != nil {
		return s.order
	}
	if s.nfirst = 0; len(s.clients) == 0 {
		return nil
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
	s.nfirst = len(first)
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

// announceLocked sends an announcement to every client: to the privileged
// at once, on the announcing goroutine; to the others too when they are
// few and nothing is on its way to them, else through the fan-out (fanOut),
// which reaches them in slices behind what it already carries. The next
// announcement then reaches the privileged without waiting for this one's
// writes to every other client (issue 32: with 2,000 subscribers of other
// uids, 5-10 ms of writes, which held the next drill and its stepdown back).
func (s *Server) announceLocked(typ string, b []byte) {
	order := s.orderLocked()
	first, rest := order[:s.nfirst], order[s.nfirst:]
	n := s.sendLocked(first, b)
	if len(s.fan) == 0 && len(rest) <= s.fanInLine {
		n += s.sendLocked(rest, b)
		s.met.messagesSent.WithLabelValues(typ).Add(float64(n))
		return
	}
	s.met.messagesSent.WithLabelValues(typ).Add(float64(n))
	s.fanLocked(typ, b, rest)
}

// fanLocked queues b for the clients of rest, behind what the fan-out
// already carries, and starts the fan-out if it is not running.
func (s *Server) fanLocked(typ string, b []byte, rest []*client) {
	if s.closed || len(rest) == 0 {
		return
	}
	s.fan = append(s.fan, &fanJob{typ: typ, b: b, rest: rest})
	if len(rest) >= busyFanOut {
		s.busy("writing to thousands of stepdown subscribers")
	}
	if !s.fanning {
		s.fanning = true
		s.wg.Add(1) // under mu, before Run's Wait: Run sets closed first
		go s.fanOut()
	}
}

// fanJob is a message on its way to the clients beyond the privileged:
// those connected when it was sent (a later one's hello already says it),
// in their order.
type fanJob struct {
	typ  string
	b    []byte
	rest []*client
	next int // the first of rest not yet written to
}

// fanSlice is how many clients a fan-out writes to per hold of mu: about
// 0.2 ms of writes (a direct write to a unix socket that wakes its reader
// costs 2-4 µs), which is how long a drill may wait for it.
const fanSlice = 64

// busyFanOut is the fan-out (clients beyond the privileged) that tells
// Options.Busy: about 1.5 ms of writes. A node with a few hundred
// subscribers keeps its one Go processor.
const busyFanOut = 512

// fanOut writes the queued messages to the clients they are for, in the
// order they were sent, a slice at a time: between slices it lets go of
// mu, so that a new announcement reaches the privileged at once, cuts off
// the slice's laggards (unlock), and lets what waits for its processor run
// (yieldToInput). It ends when the queue is empty.
func (s *Server) fanOut() {
	defer s.wg.Done()
	for {
		if s.fanSliceHook != nil {
			s.fanSliceHook()
		}
		s.mu.Lock()
		if len(s.fan) == 0 || s.closed {
			s.fan, s.fanning = nil, false
			s.unlock()
			return
		}
		j := s.fan[0]
		end := min(j.next+fanSlice, len(j.rest))
		n := s.sendLocked(j.rest[j.next:end], j.b)
		s.met.messagesSent.WithLabelValues(j.typ).Add(float64(n))
		if j.next = end; j.next == len(j.rest) {
			s.fan[0] = nil
			s.fan = s.fan[1:]
		}
		s.unlock()
		s.yieldToInput()
	}
}

// yieldToInput runs, between two slices of a fan-out, what would otherwise
// wait for its processor: the clients' waiting input, acted on here
// (inputPoller.serveWaiting: a drill's stepdown goes out from here, the
// fan-out's lock let go). It does not give the processor away
// (runtime.Gosched): the goroutines waiting for it would be HTTP's, and
// under a scrape flood in qemu's emulation a fan-out to 4,096 that yielded
// after each slice reached them 3 s late; Go's preemption still lets them
// run every 10 ms, and with a second processor (procs) they have it.
func (s *Server) yieldToInput() {
	if s.poller != nil {
		s.poller.serveWaiting()
	}
}

// sendLocked writes b to every client of all, in their order, and returns
// how many took it. Those too far behind to take it are removed, and cut
// off once mu is let go (unlock): closing 2,000 of them at once held mu,
// and every announcement, for 5-27 ms (issue 32).
func (s *Server) sendLocked(all []*client, b []byte) int {
	n := len(all)
	for _, c := range all {
		if !c.send(b) {
			n--
			s.removeLocked(c)
			s.lagged = append(s.lagged, c)
		}
	}
	return n
}

// unlock lets go of mu, then cuts off the laggards sendLocked removed.
func (s *Server) unlock() {
	lagged := s.lagged
	s.lagged = nil
	s.mu.Unlock()
	for _, c := range lagged {
		c.shutdown(CauseLaggard)
		s.limit.Log(slog.LevelWarn, "stepdown client fell behind: disconnected", "pid", c.cred.PID, "uid", c.cred.UID, "queue_size", s.cfg.QueueSize)
	}
}

// heartbeat ticks the announcer (whose clock may be a test's, without a
// timer of its own), then tells every client the state it was last told:
// a heartbeat's seq is the last event sent before it. The privileged hear
// it at once, the others through the fan-out unless it is still carrying
// something to them.
func (s *Server) heartbeat() {
	s.ann.Tick()
	s.mu.Lock()
	st := s.snap.Status
	m := stepdown.Message{Type: stepdown.TypeHeartbeat, State: st.State, Epoch: st.Epoch, Seq: s.snap.Seq, Drill: st.Drill}
	if st.State != stepdown.StateOK {
		m.Reason = st.Reason
	}
	b := m.AppendLine(nil)
	if len(s.fan) == 0 {
		s.announceLocked(stepdown.TypeHeartbeat, b)
	} else {
		// The fan-out is behind: those it has not reached hear its
		// messages, which are newer news than a heartbeat, and a
		// heartbeat queued behind them would only hold the next event
		// back (under qemu's emulation, 4,096 subscribers' heartbeats
		// queued up and a drill reached them 10 s late).
		order := s.orderLocked()
		n := s.sendLocked(order[:s.nfirst], b)
		s.met.messagesSent.WithLabelValues(stepdown.TypeHeartbeat).Add(float64(n))
	}
	s.unlock()
}
