package peers

import (
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
)

func TestJudge(t *testing.T) {
	t.Parallel()
	ms := time.Millisecond
	m := func(peer string, off, rtt time.Duration) Measure { return Measure{Peer: peer, Offset: off, RTT: rtt} }
	bound := func(x Measure, b time.Duration) Measure {
		x.PeerErrorBound, x.HasPeerErrorBound = b, true
		return x
	}
	tests := []struct {
		name string
		ms   []Measure
		want Verdict
	}{
		{name: "no peer measured: undecided", want: Verdict{}},
		{name: "one peer, far off: undecided", ms: []Measure{m("a", 800*ms, ms)},
			want: Verdict{Measured: 1, Disagreeing: []string{"a"}, FleetOffset: 400 * ms, Uncertainty: ms / 2}},
		{name: "this node 800 ms ahead of two peers: outside", ms: []Measure{m("a", -800*ms, 4*ms), m("b", -801*ms, 6*ms)},
			want: Verdict{Measured: 2, Disagreeing: []string{"a", "b"}, Decided: true, Outside: true, FleetOffset: -800 * ms, Uncertainty: 2500 * time.Microsecond}},
		{name: "one of two peers 800 ms ahead: inside (no majority)", ms: []Measure{m("b", 1*ms, 4*ms), m("c", 800*ms, 4*ms)},
			want: Verdict{Measured: 2, Disagreeing: []string{"c"}, Decided: true, FleetOffset: ms, Uncertainty: 2 * ms}},
		{name: "two of three: outside", ms: []Measure{m("a", 300*ms, 0), m("b", 0, 0), m("c", -200*ms, 0)},
			want: Verdict{Measured: 3, Disagreeing: []string{"a", "c"}, Decided: true, Outside: true}},
		{name: "two of four: inside (half is no strict majority)", ms: []Measure{m("a", 300*ms, 0), m("b", 0, 0), m("c", 200*ms, 0), m("d", 0, 0)},
			want: Verdict{Measured: 4, Disagreeing: []string{"a", "c"}, Decided: true}},
		{name: "three of four: outside", ms: []Measure{m("a", 300*ms, 0), m("b", 250*ms, 0), m("c", 200*ms, 0), m("d", 0, 0)},
			want: Verdict{Measured: 4, Disagreeing: []string{"a", "b", "c"}, Decided: true, Outside: true, FleetOffset: 200 * ms}},
		{name: "the round trip's half counts for the peer", ms: []Measure{m("a", 150*ms, 100*ms), m("b", -150*ms, 100*ms)},
			want: Verdict{Measured: 2, Decided: true, Uncertainty: 50 * ms}},
		{name: "just over the bound beyond rtt/2", ms: []Measure{m("a", 150*ms+1, 100*ms), m("b", -150*ms-1, 100*ms)},
			want: Verdict{Measured: 2, Disagreeing: []string{"a", "b"}, Decided: true, Outside: true, Uncertainty: 50 * ms}},
		{name: "exactly at the bound is not beyond it", ms: []Measure{m("a", 100*ms, 0), m("b", -100*ms, 0)},
			want: Verdict{Measured: 2, Decided: true}},
		{name: "the peers' own error bounds count", ms: []Measure{bound(m("a", 150*ms, 0), 60*ms), bound(m("b", 150*ms, 0), 40*ms)},
			want: Verdict{Measured: 2, Disagreeing: []string{"b"}, Decided: true, FleetOffset: 150 * ms, Uncertainty: 50 * ms}},
		{name: "a peer with a saturated bound never disagrees", ms: []Measure{bound(m("a", time.Hour, time.Hour), 1<<63-1), m("b", time.Hour, 0)},
			want: Verdict{Measured: 2, Disagreeing: []string{"b"}, Decided: true, FleetOffset: time.Hour, Uncertainty: (1<<63 - 1) / 2}},
	}
	for _, tc := range tests {
		got := Judge(tc.ms, 100*ms)
		if diff := cmp.Diff(tc.want, got); diff != "" {
			t.Errorf("%s (-want +got):\n%s", tc.name, diff)
		}
	}
}
