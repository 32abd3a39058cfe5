package socket_test

import (
	"context"
	"strings"
	"sync"
	"testing"

	"github.com/clockwatch/clockwatch/internal/transport/socket"
	"github.com/clockwatch/clockwatch/stepdown"
)

// fakePeers is a PeerWatcher whose peers the test moves.
type fakePeers struct {
	mu      sync.Mutex
	watches map[string][]func(stepdown.Message)
	stopped int
}

func (f *fakePeers) WatchPeer(peer string, send func(stepdown.Message)) (func(), error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.watches == nil {
		f.watches = map[string][]func(stepdown.Message){}
	}
	f.watches[peer] = append(f.watches[peer], send)
	send(stepdown.Message{Type: stepdown.TypePeer, Peer: peer, State: stepdown.StateOK, Epoch: 1})
	return func() {
		f.mu.Lock()
		defer f.mu.Unlock()
		f.stopped++
	}, nil
}

func (f *fakePeers) tell(peer string, m stepdown.Message) {
	f.mu.Lock()
	defer f.mu.Unlock()
	for _, send := range f.watches[peer] {
		send(m)
	}
}

// TestWatchPeer: a watch_peer is answered at once, the peer's changes reach
// that client only, the watch ends with the connection, and a server
// without peers, or a client with too many watches, is told why.
func TestWatchPeer(t *testing.T) {
	t.Parallel()
	peers := &fakePeers{}
	cfg := testConfig(t)
	start(t, cfg, socket.Options{Peers: peers})
	watcher, _ := dial(t, cfg.Socket)
	other, _ := dial(t, cfg.Socket)
	if err := watcher.WatchPeer("node-c"); err != nil {
		t.Fatal(err)
	}
	if m := next(t, watcher); m.Type != stepdown.TypePeer || m.Peer != "node-c" || m.State != stepdown.StateOK || m.Epoch != 1 {
		t.Fatalf("first answer %s", m)
	}
	peers.tell("node-c", stepdown.Message{Type: stepdown.TypePeer, Peer: "node-c", State: stepdown.StateStepdown, Reason: stepdown.ReasonStep, Epoch: 2})
	if m := next(t, watcher); m.Type != stepdown.TypePeer || m.State != stepdown.StateStepdown || m.Epoch != 2 {
		t.Fatalf("the step %s", m)
	}
	// The other client hears heartbeats only: send it a drill-free ack
	// of nothing and read its error, which must come before any peer
	// message.
	if err := other.Send(stepdown.Message{Type: stepdown.TypeAck, Seq: 999}); err != nil {
		t.Fatal(err)
	}
	if m := next(t, other); m.Type != stepdown.TypeError {
		t.Errorf("the other client got %s", m)
	}
	// Sixteen watches a connection.
	for i := range 15 {
		if err := watcher.WatchPeer("node-" + string(rune('d'+i))); err != nil {
			t.Fatal(err)
		}
		next(t, watcher)
	}
	if err := watcher.WatchPeer("one-too-many"); err != nil {
		t.Fatal(err)
	}
	if m := next(t, watcher); m.Type != stepdown.TypeError || !strings.Contains(m.Error, "16 watches") {
		t.Errorf("the 17th watch: %s", m)
	}
	watcher.Close()
	waitFor(t, "the watches to end with the connection", func() bool {
		peers.mu.Lock()
		defer peers.mu.Unlock()
		return peers.stopped == 16
	})

	// Without peers.
	cfg2 := testConfig(t)
	start(t, cfg2, socket.Options{})
	c, _ := dial(t, cfg2.Socket)
	if err := c.WatchPeer("node-c"); err != nil {
		t.Fatal(err)
	}
	if m := next(t, c); m.Type != stepdown.TypeError || m.Code != stepdown.CodeBadRequest || !strings.Contains(m.Error, "peers: is not configured") {
		t.Errorf("without peers: %s", m)
	}
}

// TestSubscribeWatchPeers: the Go client asks for its peers after each
// hello, keeps their state apart from the local one, and delivers their
// messages on Events.
func TestSubscribeWatchPeers(t *testing.T) {
	t.Parallel()
	peers := &fakePeers{}
	cfg := testConfig(t)
	start(t, cfg, socket.Options{Peers: peers})
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	sub := stepdown.Subscribe(ctx, stepdown.Options{Path: cfg.Socket, WatchPeers: []string{"node-c"}})
	if err := sub.WaitOK(ctx); err != nil {
		t.Fatal(err)
	}
	waitFor(t, "node-c's first state", func() bool { st, _ := sub.PeerState("node-c"); return st == stepdown.StateOK })
	peers.tell("node-c", stepdown.Message{Type: stepdown.TypePeer, Peer: "node-c", State: stepdown.StateStepdown, Reason: stepdown.ReasonStep, Epoch: 2,
		Detail: "its clock stepped (or it rebooted): clock epoch 2, was 1"})
	for ev := range sub.Events() {
		if ev.Type == stepdown.TypePeer && ev.State == stepdown.StateStepdown {
			if ev.Peer != "node-c" || ev.Epoch != 2 {
				t.Errorf("event %s", ev.Message)
			}
			break
		}
	}
	if st, m := sub.PeerState("node-c"); st != stepdown.StateStepdown || m.Epoch != 2 {
		t.Errorf("PeerState = %s %s", st, m)
	}
	if st, _ := sub.State(); st != stepdown.StateOK {
		t.Errorf("the local state moved with the peer's: %s", st)
	}
	if st, _ := sub.PeerState("node-x"); st != stepdown.StateUnknown {
		t.Errorf("an unwatched peer: %s", st)
	}
}
