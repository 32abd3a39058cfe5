package peers

import (
	"context"
	"fmt"
	"net/netip"
	"testing"
	"time"

	"github.com/clockwatch/clockwatch/internal/timesource"
	"github.com/clockwatch/clockwatch/stepdown"
)

// offsetExchanger is the querier of a node whose clock runs off by d: what
// it measures of the others is off by −d.
type offsetExchanger struct{ d time.Duration }

func (o offsetExchanger) Exchange(addr string, timeout time.Duration, key *Key) (Sample, error) {
	s, err := NTPExchanger{}.Exchange(addr, timeout, key)
	s.Offset -= o.d
	return s, err
}

// node is one agent of a loopback fleet whose clock runs off by shift.
type node struct {
	s    *Service
	addr string
}

// fleetOnLoopback starts one agent per shift, each listing every agent
// (itself included, as one file for all nodes would) as static peers.
func fleetOnLoopback(t *testing.T, shifts ...time.Duration) []node {
	t.Helper()
	var conns []PacketConn
	var static []string
	for range shifts {
		c, err := ListenUDP("127.0.0.1:0")
		if err != nil {
			t.Fatal(err)
		}
		conns = append(conns, c)
		static = append(static, c.LocalAddr().String())
	}
	ctx, cancel := context.WithCancel(context.Background())
	var nodes []node
	done := make(chan error, len(shifts))
	for i, d := range shifts {
		cfg := DefaultConfig()
		cfg.Listen, cfg.Static, cfg.Interval, cfg.Exchanges, cfg.RateLimit = static[i], static, time.Second, 2, 100
		conn := conns[i]
		if d != 0 {
			conn = shifted{conn, d}
		}
		epoch := uint64(i + 1)
		s := New(cfg, Options{Conn: conn, Exchanger: offsetExchanger{d}, Now: func() time.Time { return time.Now().Add(d) },
			LocalAddrs: func() ([]netip.Addr, error) { return nil, nil },
			Local: func() State {
				return State{State: stepdown.StateOK, Epoch: epoch}
			}})
		nodes = append(nodes, node{s: s, addr: static[i]})
		go func() { done <- s.Run(ctx) }()
	}
	t.Cleanup(func() {
		cancel()
		for range shifts {
			if err := <-done; err != nil {
				t.Error(err)
			}
		}
	})
	return nodes
}

// waitReading waits for a decided reading of n.
func waitReading(t *testing.T, n node, ok func(timesource.Reading) bool) timesource.Reading {
	t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for {
		r := n.s.Reading()
		if ok(r) {
			return r
		}
		if time.Now().After(deadline) {
			t.Fatalf("%s: reading %+v", n.addr, r)
		}
		time.Sleep(50 * time.Millisecond)
	}
}

// TestFleetOnLoopback: three agents, one 800 ms ahead: it finds itself
// outside, the other two inside and see its offset; each drops itself from
// its static list by the agent id its own replies carry.
func TestFleetOnLoopback(t *testing.T) {
	t.Parallel()
	ns := fleetOnLoopback(t, 0, 0, 800*time.Millisecond)
	decided := func(r timesource.Reading) bool { return r.Up && r.Found }
	c := waitReading(t, ns[2], decided)
	if !c.OutsideFleet || c.Offset < 790*time.Millisecond || c.Offset > 810*time.Millisecond {
		t.Errorf("the node ahead: %+v, want outside, offset +800ms", c)
	}
	for _, n := range ns[:2] {
		r := waitReading(t, n, decided)
		if r.OutsideFleet || r.Offset.Abs() > 10*time.Millisecond {
			t.Errorf("%s: %+v, want inside", n.addr, r)
		}
		snap := n.s.Snapshot()
		if snap.Peers != 2 {
			t.Errorf("%s: %d peers, want 2 (itself dropped)", n.addr, snap.Peers)
		}
		for _, res := range snap.Results {
			if res.Peer.Addr == ns[2].addr {
				if off := res.Best.Offset - 800*time.Millisecond; !res.OK || off.Abs() > 5*time.Millisecond {
					t.Errorf("%s measures the node ahead at %v (%v)", n.addr, res.Best.Offset, res.Err)
				}
				if res.Best.State.Epoch != 3 || res.Best.State.State != stepdown.StateOK {
					t.Errorf("%s: the node ahead's state %+v", n.addr, res.Best.State)
				}
			}
		}
	}
	if notes := ns[2].s.Notes(); len(notes) != 1 || !notes[0].Warning {
		t.Errorf("notes of the node ahead: %+v", notes)
	}
	if notes := ns[0].s.Notes(); len(notes) != 0 {
		t.Errorf("notes of a node inside: %+v", notes)
	}
	fmt.Fprint(testWriter{t}, ns[2].s.Reading().Detail)
}

type testWriter struct{ t *testing.T }

func (w testWriter) Write(b []byte) (int, error) { w.t.Log(string(b)); return len(b), nil }

// TestPartitioned: a node that reaches no peer decides nothing: its
// reading is down, never outside.
func TestPartitioned(t *testing.T) {
	t.Parallel()
	cfg := DefaultConfig()
	cfg.Listen, cfg.Static, cfg.Timeout, cfg.Exchanges = "127.0.0.1:0", []string{"127.0.0.1:9", "127.0.0.1:10"}, 50*time.Millisecond, 1
	cfg.MaxRTT = cfg.Timeout
	s := New(cfg, Options{LocalAddrs: func() ([]netip.Addr, error) { return nil, nil }})
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	go s.Run(ctx)
	r := waitReading(t, node{s: s}, func(r timesource.Reading) bool { return r.Found })
	if r.Up || r.OutsideFleet || r.Err == nil || r.Err.Error() != "0 of 2 peers measured this round: the fleet's judge decides nothing with fewer than two" {
		t.Errorf("partitioned: %+v", r)
	}
}
