package peers

import "sync"

// watchers are the local applications' subscriptions to peers' clocks
// (watch_peer on the stepdown socket).
type watchers struct {
	mu sync.Mutex
}

func newWatchers() *watchers { return &watchers{} }

// watched reports whether an application watches p: it is measured every
// round.
func (w *watchers) watched(p Peer) bool { return false }

// update hands a round's results to the watchers.
func (w *watchers) update([]Result) {}
