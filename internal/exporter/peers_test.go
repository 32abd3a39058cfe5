package exporter

import (
	"errors"
	"flag"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/testutil"
	"github.com/prometheus/common/expfmt"

	"github.com/clockwatch/clockwatch/internal/peers"
	"github.com/clockwatch/clockwatch/stepdown"
)

var updatePeers = flag.Bool("update-peers", false, "rewrite testdata/peers-*.prom")

type fixedPeers peers.Snapshot

func (f fixedPeers) Snapshot() peers.Snapshot { return peers.Snapshot(f) }

func TestPeersCollector(t *testing.T) {
	t.Parallel()
	ms := time.Millisecond
	res := func(name string, off, rtt time.Duration, st stepdown.State, epoch uint64) peers.Result {
		return peers.Result{Peer: peers.Peer{Name: name, Addr: name + ":9847"}, OK: true,
			Best: peers.Sample{Offset: off, RTT: rtt, HasState: true, State: peers.State{State: st, Epoch: epoch}}}
	}
	inside := peers.Snapshot{Rounded: true, Peers: 3, Places: map[string]bool{"static": true},
		Results: []peers.Result{res("node-b", 2*ms, 3*ms, stepdown.StateOK, 4), res("node-c", 800*ms, 4*ms, stepdown.StateStepdown, 7),
			{Peer: peers.Peer{Name: "node-d", Addr: "10.0.0.4:9847"}, Err: errors.New("timeout"), Exchanges: map[string]int{"timeout": 4}}},
		Verdict:   peers.Judge([]peers.Measure{{Peer: "node-b", Offset: 2 * ms, RTT: 3 * ms}, {Peer: "node-c", Offset: 800 * ms, RTT: 4 * ms}}, 100*ms),
		Exchanges: map[string]uint64{"ok": 80, "timeout": 4, "spoofed": 1}, Requests: [5]uint64{90, 3, 12, 1, 0}}
	outside := peers.Snapshot{Rounded: true, Peers: 2, Places: map[string]bool{"kubernetes": true, "dns": false},
		Results: []peers.Result{res("node-a", -800*ms, 3*ms, stepdown.StateOK, 1), res("node-b", -799*ms, 3*ms, stepdown.StateOK, 4)},
		Verdict: peers.Judge([]peers.Measure{{Peer: "node-a", Offset: -800 * ms, RTT: 3 * ms}, {Peer: "node-b", Offset: -799 * ms, RTT: 3 * ms}}, 100*ms)}
	for _, tc := range []struct {
		name string
		snap peers.Snapshot
	}{
		{"before-the-first-round", peers.Snapshot{Places: map[string]bool{"dns": true}}},
		{"inside", inside},
		{"outside", outside},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			c := NewPeersCollector(fixedPeers(tc.snap))
			reg := prometheus.NewPedanticRegistry()
			reg.MustRegister(c)
			mfs, err := reg.Gather()
			if err != nil {
				t.Fatal(err)
			}
			var b strings.Builder
			for _, mf := range mfs {
				if _, err := expfmt.MetricFamilyToText(&b, mf); err != nil {
					t.Fatal(err)
				}
			}
			golden := filepath.Join("testdata", "peers-"+tc.name+".prom")
			if *updatePeers {
				if err := os.WriteFile(golden, []byte(b.String()), 0o644); err != nil {
					t.Fatal(err)
				}
			}
			want, err := os.ReadFile(golden)
			if err != nil {
				t.Fatal(err)
			}
			if diff := cmp.Diff(string(want), b.String()); diff != "" {
				t.Errorf("metrics (-want +got):\n%s", diff)
			}
			if probs, err := testutil.CollectAndLint(c); err != nil || len(probs) > 0 {
				t.Errorf("lint: %v %v", probs, err)
			}
		})
	}
}
