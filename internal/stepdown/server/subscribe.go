package server

import (
	"sync"

	"github.com/clockwatch/clockwatch/internal/stepdown/policy"
)

// Subscribe delivers every event the server announces from now on (the
// stepdowns and resumes its socket clients get) on a channel, for a second
// transport in the same process: the clockbound segment. It is a channel
// form of Announcer().Subscribe. Delivery never blocks the announcer: an
// event that finds the buffer full is dropped for this subscriber, which
// must therefore take the current state from Status and use the events as a
// signal to look. cancel ends the subscription and closes the channel.
func (s *Server) Subscribe(buffer int) (events <-chan policy.Event, cancel func()) {
	c := make(chan policy.Event, max(buffer, 1))
	var mu sync.Mutex
	open := true
	s.ann.Subscribe(func(a Announcement) {
		mu.Lock()
		defer mu.Unlock()
		if !open {
			return
		}
		select {
		case c <- a.Event:
		default:
		}
	})
	return c, func() {
		mu.Lock()
		defer mu.Unlock()
		if open {
			open = false
			close(c)
		}
	}
}
