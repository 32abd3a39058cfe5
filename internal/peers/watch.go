package peers

import (
	"errors"
	"fmt"
	"net/netip"
	"sync"

	"github.com/clockwatch/clockwatch/stepdown"
)

// MaxWatches bounds the watches of all the local applications together:
// each watched peer is measured every round.
const MaxWatches = 1024

// watchers are the local applications' watches of peers' clocks
// (watch_peer on the stepdown socket). Only peers this node found are
// measured for them: a watch never makes clockwatch query an address of an
// application's choosing.
type watchers struct {
	mu   sync.Mutex
	next uint64
	subs map[uint64]*watch
}

type watch struct {
	query string
	send  func(stepdown.Message)
	last  stepdown.Message
	sent  bool
	// epochKnown says that last.Epoch is one the peer announced.
	epochKnown bool
}

func newWatchers() *watchers { return &watchers{subs: map[uint64]*watch{}} }

// matches reports whether an application's name for a peer is p: its name,
// its address, or its IP address.
func matches(query string, p Peer) bool {
	if p.Name == query || p.Addr == query {
		return true
	}
	ap, err := netip.ParseAddrPort(p.Addr)
	if err != nil {
		return false
	}
	a, err := netip.ParseAddr(query)
	return err == nil && a.Unmap() == ap.Addr().Unmap()
}

// watched reports whether an application watches p: it is measured every
// round.
func (w *watchers) watched(p Peer) bool {
	w.mu.Lock()
	defer w.mu.Unlock()
	for _, s := range w.subs {
		if matches(s.query, p) {
			return true
		}
	}
	return false
}

// view is what a watch of query is told, from the peers found and the last
// round's results.
func (s *watch) view(peers []Peer, results []Result) (m stepdown.Message, epochKnown bool) {
	m = stepdown.Message{Type: stepdown.TypePeer, Peer: s.query, State: stepdown.StateUnknown,
		Reason: stepdown.ReasonPeerUnreachable, Epoch: s.last.Epoch}
	epochKnown = s.epochKnown
	found := false
	for _, p := range peers {
		found = found || matches(s.query, p)
	}
	if !found {
		m.Detail = "not among this node's peers (peers.static, peers.dns, peers.kubernetes)"
		return m, epochKnown
	}
	var r *Result
	for i := range results {
		if matches(s.query, results[i].Peer) {
			r = &results[i]
			break
		}
	}
	switch {
	case r == nil:
		m.Detail = "not measured yet"
		return m, epochKnown
	case !r.OK:
		m.Detail = fmt.Sprintf("this node cannot measure it: %v", r.Err)
		return m, epochKnown
	}
	m.OffsetSeconds = stepdown.Float(r.Best.Offset.Seconds())
	if !r.Best.HasState {
		m.Reason = ""
		m.Detail = "its clockwatch does not say its state (a version older than the state field)"
		return m, epochKnown
	}
	st := r.Best.State
	m.State, m.Reason, m.Epoch = st.State, st.Reason, st.Epoch
	if st.State == stepdown.StateOK {
		m.Reason = ""
	}
	if st.HasErrorBound {
		m.ErrorBoundSeconds = stepdown.Float(st.ErrorBound.Seconds())
	}
	switch {
	case epochKnown && s.last.Epoch != st.Epoch:
		m.Detail = fmt.Sprintf("its clock stepped (or it rebooted): clock epoch %d, was %d", st.Epoch, s.last.Epoch)
	case st.State != stepdown.StateOK:
		m.Detail = fmt.Sprintf("its clockwatch says %s (%s)", st.State, st.Reason)
	}
	return m, true
}

// changed reports whether m says something new to the watch.
func (s *watch) changed(m stepdown.Message) bool {
	return !s.sent || m.State != s.last.State || m.Reason != s.last.Reason || m.Epoch != s.last.Epoch
}

// tell sends m when it is news.
func (s *watch) tell(m stepdown.Message, epochKnown bool) {
	if !s.changed(m) {
		return
	}
	s.last, s.sent, s.epochKnown = m, true, epochKnown
	s.send(m)
}

// add starts a watch of query, told at once what is known.
func (w *watchers) add(query string, send func(stepdown.Message), peers []Peer, results []Result) (stop func(), err error) {
	if query == "" {
		return nil, errors.New("watch_peer: name the peer (\"peer\")")
	}
	w.mu.Lock()
	defer w.mu.Unlock()
	if len(w.subs) >= MaxWatches {
		return nil, fmt.Errorf("watch_peer: %d watches already, the most this node keeps", MaxWatches)
	}
	id := w.next
	w.next++
	s := &watch{query: query, send: send}
	w.subs[id] = s
	s.tell(s.view(peers, results))
	return func() {
		w.mu.Lock()
		defer w.mu.Unlock()
		delete(w.subs, id)
	}, nil
}

// update tells every watch what the round found.
func (w *watchers) update(peers []Peer, results []Result) {
	w.mu.Lock()
	defer w.mu.Unlock()
	for _, s := range w.subs {
		s.tell(s.view(peers, results))
	}
}

// WatchPeer follows the clock of the peer an application names (a name as
// this node's metrics show it, an IP:port, or an IP address): send is
// called at once with what is known, then after each round that changes
// the peer's state, reason or clock epoch, or its reachability. send must
// not block and must not call stop. The peer is measured every round from
// now on, if it is one this node found; a name that is none is reported
// unknown (peer_unreachable) until it appears.
func (s *Service) WatchPeer(peer string, send func(stepdown.Message)) (stop func(), err error) {
	s.mu.Lock()
	peers, results := s.peers, s.last
	s.mu.Unlock()
	return s.watch.add(peer, send, peers, results)
}
