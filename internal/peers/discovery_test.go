package peers

import (
	"context"
	"errors"
	"fmt"
	"net/netip"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/clockwatch/clockwatch/internal/kubernetes"
)

type fakeResolver map[string][]string

func (f fakeResolver) LookupNetIP(_ context.Context, network, host string) ([]netip.Addr, error) {
	if network != "ip" {
		return nil, fmt.Errorf("network %q", network)
	}
	as, ok := f[host]
	if !ok {
		return nil, fmt.Errorf("lookup %s: no such host", host)
	}
	var out []netip.Addr
	for _, a := range as {
		out = append(out, netip.MustParseAddr(a))
	}
	return out, nil
}

type fakeNodes struct {
	nodes []kubernetes.NodeAddress
	err   error
}

func (f *fakeNodes) ListNodeAddresses(context.Context) ([]kubernetes.NodeAddress, error) {
	return f.nodes, f.err
}

func names(ps []Peer) []string {
	var out []string
	for _, p := range ps {
		out = append(out, p.Name+"="+p.Addr)
	}
	return out
}

func TestDiscovery(t *testing.T) {
	t.Parallel()
	res := fakeResolver{
		"a.example":              {"192.0.2.1", "192.0.2.99"},
		"clockwatch.svc.cluster": {"10.0.0.1", "10.0.0.2", "::ffff:10.0.0.3", "fd00::4"},
		"single.svc.cluster":     {"10.0.0.9"},
	}
	local := func() ([]netip.Addr, error) {
		return []netip.Addr{netip.MustParseAddr("10.0.0.2"), netip.MustParseAddr("127.0.0.1")}, nil
	}
	nodes := &fakeNodes{nodes: []kubernetes.NodeAddress{{Name: "node-a", InternalIP: "10.0.0.1"}, {Name: "node-b", InternalIP: "10.0.0.2"}, {Name: "node-c", InternalIP: "10.0.0.3"},
		{Name: "node-d", InternalIP: ""}, {Name: "me", InternalIP: "10.0.0.5"}}}
	tests := []struct {
		name    string
		d       *Discovery
		want    []string
		wantErr string
	}{
		{name: "static", d: &Discovery{Static: []string{"a.example:9847", "192.0.2.2:1234", "[2001:db8::1]:9847"}},
			want: []string{"192.0.2.2:1234=192.0.2.2:1234", "[2001:db8::1]:9847=[2001:db8::1]:9847", "a.example:9847=192.0.2.1:9847"}},
		{name: "static name not resolving: the others", d: &Discovery{Static: []string{"nope.example:9847", "192.0.2.2:1"}},
			want: []string{"192.0.2.2:1=192.0.2.2:1"}},
		{name: "static all failing", d: &Discovery{Static: []string{"nope.example:9847"}},
			wantErr: "peers.static: nope.example:9847: lookup nope.example: no such host"},
		{name: "dns, self left out", d: &Discovery{DNS: "clockwatch.svc.cluster", Port: 9847},
			want: []string{"10.0.0.1:9847=10.0.0.1:9847", "10.0.0.3:9847=10.0.0.3:9847", "[fd00::4]:9847=[fd00::4]:9847"}},
		{name: "kubernetes, self by name and by address, no address left out", d: &Discovery{Kubernetes: nodes, Self: "me", Port: 9847},
			want: []string{"node-a=10.0.0.1:9847", "node-c=10.0.0.3:9847"}},
		{name: "all three, each address once", d: &Discovery{Static: []string{"10.0.0.1:9847"}, DNS: "single.svc.cluster", Kubernetes: nodes, Self: "me", Port: 9847},
			want: []string{"10.0.0.1:9847=10.0.0.1:9847", "10.0.0.9:9847=10.0.0.9:9847", "node-c=10.0.0.3:9847"}},
		{name: "dns failing", d: &Discovery{DNS: "gone.svc.cluster", Port: 1}, wantErr: "peers.dns: lookup gone.svc.cluster: no such host"},
		{name: "kubernetes failing", d: &Discovery{Kubernetes: &fakeNodes{err: errors.New("forbidden")}}, wantErr: "peers.kubernetes: forbidden"},
	}
	for _, tc := range tests {
		tc.d.Resolver, tc.d.LocalAddrs = res, local
		got, err := tc.d.Refresh(context.Background())
		if diff := cmp.Diff(tc.want, names(got)); diff != "" {
			t.Errorf("%s (-want +got):\n%s", tc.name, diff)
		}
		if gotErr := fmt.Sprint(err); (err != nil || tc.wantErr != "") && gotErr != tc.wantErr {
			t.Errorf("%s: err %q, want %q", tc.name, gotErr, tc.wantErr)
		}
	}
}

// TestDiscoveryKeepsLast: a place that fails keeps the peers it gave last.
func TestDiscoveryKeepsLast(t *testing.T) {
	t.Parallel()
	nodes := &fakeNodes{nodes: []kubernetes.NodeAddress{{Name: "node-a", InternalIP: "10.0.0.1"}}}
	d := &Discovery{Kubernetes: nodes, Port: 1}
	if _, err := d.Refresh(context.Background()); err != nil {
		t.Fatal(err)
	}
	nodes.err = errors.New("the API server is away")
	got, err := d.Refresh(context.Background())
	if err == nil || len(got) != 1 || got[0].Name != "node-a" {
		t.Errorf("after a failure: %v, %v", names(got), err)
	}
}

func TestPick(t *testing.T) {
	t.Parallel()
	var fleet []Peer
	for i := range 10 {
		fleet = append(fleet, Peer{Name: fmt.Sprintf("n%d", i), Addr: fmt.Sprintf("10.0.0.%d:1", i)})
	}
	if got := Pick(fleet[:3], 4, 7, 1, nil); len(got) != 3 {
		t.Errorf("a small fleet: %d peers, want all 3", len(got))
	}
	// Every peer once in ⌈10/4⌉ = 3 rounds; each round 4.
	seen := map[string]int{}
	for round := range uint64(3) {
		got := Pick(fleet, 4, round, 42, nil)
		if len(got) != 4 {
			t.Fatalf("round %d: %d peers", round, len(got))
		}
		for _, p := range got {
			seen[p.Name]++
		}
	}
	if len(seen) != 10 {
		t.Errorf("3 rounds measured %d of 10 peers: %v", len(seen), seen)
	}
	// Another node (seed) has another order; the same node the same one.
	if cmp.Equal(Pick(fleet, 4, 0, 42, nil), Pick(fleet, 4, 0, 43, nil)) {
		t.Error("two seeds picked the same window")
	}
	if !cmp.Equal(Pick(fleet, 4, 5, 42, nil), Pick(fleet, 4, 5, 42, nil)) {
		t.Error("the same seed and round picked differently")
	}
	// A pinned peer comes every round.
	pin := func(p Peer) bool { return p.Name == "n7" }
	for round := range uint64(5) {
		got := Pick(fleet, 4, round, 42, pin)
		found := false
		for _, p := range got {
			found = found || p.Name == "n7"
		}
		if !found || len(got) > 5 {
			t.Errorf("round %d: %v", round, names(got))
		}
	}
	// Each node's windows spread the load: over 1000 nodes picking 16
	// of 1000, no peer is asked by many more than 16 a round.
	big := make([]Peer, 1000)
	for i := range big {
		big[i] = Peer{Name: fmt.Sprintf("node-%04d", i)}
	}
	asked := map[string]int{}
	for seed := range uint64(1000) {
		for _, p := range Pick(big, 16, 3, seed, nil) {
			asked[p.Name]++
		}
	}
	most := 0
	for _, n := range asked {
		most = max(most, n)
	}
	if most > 40 {
		t.Errorf("the busiest peer was asked by %d nodes in one round (mean 16)", most)
	}
	t.Logf("1000 nodes, 16 a round: the busiest peer asked by %d", most)
}

func TestDiscoveryPlaces(t *testing.T) {
	t.Parallel()
	d := &Discovery{Static: []string{"192.0.2.1:1"}, DNS: "gone.example", Resolver: fakeResolver{}}
	d.Refresh(context.Background())
	if diff := cmp.Diff(map[string]bool{"static": true, "dns": false}, d.Places()); diff != "" {
		t.Errorf("(-want +got):\n%s", diff)
	}
}
