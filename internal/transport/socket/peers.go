package socket

import (
	"fmt"

	"github.com/clockwatch/clockwatch/stepdown"
)

// PeerWatcher follows the clocks of this node's peers for watch_peer (the
// peers source, internal/peers): send is called at once and at every change
// of the named peer's state, reason or epoch; it must not block. stop ends
// the watch.
type PeerWatcher interface {
	WatchPeer(peer string, send func(stepdown.Message)) (stop func(), err error)
}

// maxPeerWatches bounds the watch_peer requests of one client.
const maxPeerWatches = 16

// watchPeer serves a client's watch_peer: the peer messages go to this
// client only, queued like any other; the watch ends with the connection.
// It runs on the input poller's goroutine.
func (s *Server) watchPeer(c *client, m stepdown.Message) {
	switch {
	case s.opts.Peers == nil:
		c.sendError(stepdown.CodeBadRequest, "watch_peer: this node measures no peers (peers: is not configured)")
		return
	case c.peerWatches >= maxPeerWatches:
		c.sendError(stepdown.CodeBadRequest, fmt.Sprintf("watch_peer: %d watches on this connection already, the most", maxPeerWatches))
		return
	}
	stop, err := s.opts.Peers.WatchPeer(m.Peer, func(pm stepdown.Message) {
		if c.send(pm.AppendLine(nil)) {
			s.met.messagesSent.WithLabelValues(stepdown.TypePeer).Inc()
			return
		}
		// Dropping takes the server's lock and shuts the client down:
		// not from the watcher's call.
		go s.drop(c, CauseLaggard)
	})
	if err != nil {
		c.sendError(stepdown.CodeBadRequest, err.Error())
		return
	}
	c.peerWatches++
	go func() {
		<-c.done
		stop()
	}()
}
