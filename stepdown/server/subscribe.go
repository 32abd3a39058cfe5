package server

import "github.com/clockwatch/clockwatch/stepdown/policy"

// Subscribe delivers every event the server announces from now on (the
// stepdowns and resumes its socket clients get), for a second transport in
// the same process: the clockbound segment. Delivery never blocks the
// announcer: an event that finds the buffer full is dropped for this
// subscriber, which must therefore take the current state from Status and
// use the events as a signal to look. cancel ends the subscription and
// closes the channel.
func (s *Server) Subscribe(buffer int) (events <-chan policy.Event, cancel func()) {
	c := make(chan policy.Event, max(buffer, 1))
	s.mu.Lock()
	if s.subs == nil {
		s.subs = map[chan policy.Event]struct{}{}
	}
	s.subs[c] = struct{}{}
	s.mu.Unlock()
	return c, func() {
		s.mu.Lock()
		defer s.mu.Unlock()
		if _, ok := s.subs[c]; ok {
			delete(s.subs, c)
			close(c)
		}
	}
}

// deliverLocked hands e to every in-process subscriber, without blocking.
func (s *Server) deliverLocked(e policy.Event) {
	for c := range s.subs {
		select {
		case c <- e:
		default:
		}
	}
}
