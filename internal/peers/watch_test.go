package peers

import (
	"context"
	"errors"
	"net/netip"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/clockwatch/clockwatch/stepdown"
)

// TestWatchers: what a watch is told, round after round.
func TestWatchers(t *testing.T) {
	t.Parallel()
	c := Peer{Name: "node-c", Addr: "10.0.0.3:9847"}
	b := Peer{Name: "node-b", Addr: "10.0.0.2:9847"}
	found := []Peer{b, c}
	ok := func(st stepdown.State, reason stepdown.Reason, epoch uint64) []Result {
		return []Result{{Peer: c, OK: true, Best: Sample{Offset: 2 * time.Millisecond, HasState: true,
			State: State{State: st, Reason: reason, Epoch: epoch}}}}
	}
	lost := []Result{{Peer: c, Err: errors.New("i/o timeout")}}
	type round struct {
		peers   []Peer
		results []Result
	}
	brief := func(m stepdown.Message) string {
		return string(m.State) + "/" + string(m.Reason) + "/" + string(rune('0'+m.Epoch)) + " " + m.Detail
	}
	for _, tc := range []struct {
		name   string
		query  string
		rounds []round
		want   []string
	}{
		{name: "a step, then untrusted, then lost and back", query: "node-c", rounds: []round{
			{found, ok(stepdown.StateOK, "", 3)},
			{found, ok(stepdown.StateOK, "", 3)}, // nothing new
			{found, ok(stepdown.StateStepdown, stepdown.ReasonStep, 4)},
			{found, ok(stepdown.StateOK, "", 4)},
			{found, lost},
			{found, lost},
			{found, ok(stepdown.StateOK, "", 4)},
		}, want: []string{
			"unknown/peer_unreachable/0 not measured yet",
			"ok//3 ",
			"stepdown/step/4 its clock stepped (or it rebooted): clock epoch 4, was 3",
			"ok//4 ",
			"unknown/peer_unreachable/4 this node cannot measure it: i/o timeout",
			"ok//4 ",
		}},
		{name: "by IP address", query: "10.0.0.3", rounds: []round{{found, ok(stepdown.StateOK, "", 1)}},
			want: []string{"unknown/peer_unreachable/0 not measured yet", "ok//1 "}},
		{name: "a stepdown for peer_offset", query: "10.0.0.3:9847", rounds: []round{{found, ok(stepdown.StateStepdown, stepdown.ReasonPeerOffset, 1)}},
			want: []string{"unknown/peer_unreachable/0 not measured yet", "stepdown/peer_offset/1 its clockwatch says stepdown (peer_offset)"}},
		{name: "not a peer", query: "node-z", rounds: []round{{found, ok(stepdown.StateOK, "", 1)}},
			want: []string{"unknown/peer_unreachable/0 not among this node's peers (peers.static, peers.dns, peers.kubernetes)"}},
		{name: "stepped while unreachable", query: "node-c", rounds: []round{
			{found, ok(stepdown.StateOK, "", 5)}, {found, lost}, {found, ok(stepdown.StateOK, "", 6)}},
			want: []string{"unknown/peer_unreachable/0 not measured yet", "ok//5 ",
				"unknown/peer_unreachable/5 this node cannot measure it: i/o timeout",
				"ok//6 its clock stepped (or it rebooted): clock epoch 6, was 5"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			w := newWatchers()
			var got []string
			stop, err := w.add(tc.query, func(m stepdown.Message) {
				if m.Type != stepdown.TypePeer || m.Peer != tc.query {
					t.Errorf("message %s", m)
				}
				got = append(got, brief(m))
			}, found, nil)
			if err != nil {
				t.Fatal(err)
			}
			for _, r := range tc.rounds {
				w.update(r.peers, r.results)
			}
			if diff := cmp.Diff(tc.want, got); diff != "" {
				t.Errorf("(-want +got):\n%s", diff)
			}
			if !w.watched(c) && tc.query != "node-z" {
				t.Error("the watched peer is not pinned")
			}
			stop()
			if w.watched(c) {
				t.Error("still pinned after stop")
			}
		})
	}
	if _, err := newWatchers().add("", func(stepdown.Message) {}, nil, nil); err == nil {
		t.Error("a watch of no peer")
	}
}

// TestWatchPeerOnLoopback: an application on node A watches node C; C's
// clock steps (its epoch moves) and it steps down: A's watch hears both
// within a round.
func TestWatchPeerOnLoopback(t *testing.T) {
	t.Parallel()
	var cState atomic.Pointer[State]
	cState.Store(&State{State: stepdown.StateOK, Epoch: 7})
	conns := make([]PacketConn, 2)
	static := make([]string, 2)
	for i := range conns {
		c, err := ListenUDP("127.0.0.1:0")
		if err != nil {
			t.Fatal(err)
		}
		conns[i], static[i] = c, c.LocalAddr().String()
	}
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	var svcs []*Service
	for i := range conns {
		cfg := DefaultConfig()
		cfg.Listen, cfg.Static, cfg.Interval, cfg.Exchanges, cfg.RateLimit = static[i], []string{static[1-i]}, time.Second, 1, 100
		o := Options{Conn: conns[i], LocalAddrs: func() ([]netip.Addr, error) { return nil, nil }}
		if i == 1 {
			o.Local = func() State { return *cState.Load() }
		}
		s := New(cfg, o)
		svcs = append(svcs, s)
		go s.Run(ctx)
	}
	var mu sync.Mutex
	var got []stepdown.Message
	heard := make(chan struct{}, 16)
	stop, err := svcs[0].WatchPeer(static[1], func(m stepdown.Message) {
		mu.Lock()
		got = append(got, m)
		mu.Unlock()
		heard <- struct{}{}
	})
	if err != nil {
		t.Fatal(err)
	}
	defer stop()
	wait := func(what string, ok func(stepdown.Message) bool) time.Duration {
		t.Helper()
		start := time.Now()
		for {
			select {
			case <-heard:
				mu.Lock()
				m := got[len(got)-1]
				mu.Unlock()
				if ok(m) {
					return time.Since(start)
				}
			case <-time.After(10 * time.Second):
				t.Fatalf("%s: not heard; got %v", what, got)
			}
		}
	}
	wait("ok", func(m stepdown.Message) bool { return m.State == stepdown.StateOK && m.Epoch == 7 })
	cState.Store(&State{State: stepdown.StateStepdown, Reason: stepdown.ReasonStep, Epoch: 8})
	d := wait("the step", func(m stepdown.Message) bool {
		return m.State == stepdown.StateStepdown && m.Epoch == 8 && m.Reason == stepdown.ReasonStep
	})
	t.Logf("the watch heard the peer's step %v after it (interval 1s); messages: %v", d.Round(time.Millisecond), got)
}
