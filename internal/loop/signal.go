package loop

import "sync"

// Signal tells whoever listens that something happened, without waiting on
// them: a poller's "polled", a source's "news". Each listener has a channel
// of one; Notify leaves a value in every channel that is empty, so that
// signals coalesce while a listener is busy. One channel may listen to any
// number of signals (Merge): a second source with news is heard as the
// first is. The zero Signal is ready to use; a nil one never fires.
type Signal struct {
	mu   sync.Mutex
	outs []chan struct{}
}

// Notify signals every listener that is not already signalled.
func (s *Signal) Notify() {
	s.mu.Lock()
	defer s.mu.Unlock()
	for _, c := range s.outs {
		select {
		case c <- struct{}{}:
		default:
		}
	}
}

// Listen returns a new channel that receives after every Notify from now on
// (at most one value waits).
func (s *Signal) Listen() <-chan struct{} { return Merge(s) }

func (s *Signal) listen(c chan struct{}) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.outs = append(s.outs, c)
}

// Merge returns one channel that receives after a Notify of any of the
// signals (at most one value waits); nil when none is given (nil signals
// are skipped), so that a select on it blocks.
func Merge(signals ...*Signal) <-chan struct{} {
	var c chan struct{}
	for _, s := range signals {
		if s == nil {
			continue
		}
		if c == nil {
			c = make(chan struct{}, 1)
		}
		s.listen(c)
	}
	return c
}
