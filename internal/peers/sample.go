package peers

import (
	"cmp"
	"hash/fnv"
	"slices"
)

// Pick returns the peers to measure in round number round: all of them
// when there are at most n, else a window of n in an order of this node's
// own (a hash of seed and each peer's name), moved on by n every round.
// Every peer is measured once every ⌈len/n⌉ rounds, and since each node's
// order is its own, each peer is asked by about n nodes a round however
// large the fleet. pinned peers (those a local application watches) are
// measured every round besides.
func Pick(peers []Peer, n int, round, seed uint64, pinned func(Peer) bool) []Peer {
	if len(peers) <= n {
		return peers
	}
	type keyed struct {
		key uint64
		p   Peer
	}
	order := make([]keyed, len(peers))
	for i, p := range peers {
		h := fnv.New64a()
		h.Write([]byte(p.Name))
		order[i] = keyed{mix(h.Sum64() ^ mix(seed)), p}
	}
	slices.SortFunc(order, func(a, b keyed) int { return cmp.Or(cmp.Compare(a.key, b.key), cmp.Compare(a.p.Name, b.p.Name)) })
	start := int((round * uint64(n)) % uint64(len(order)))
	out := make([]Peer, 0, n)
	for i := range n {
		out = append(out, order[(start+i)%len(order)].p)
	}
	if pinned != nil {
		for _, p := range peers {
			if pinned(p) && !slices.Contains(out, p) {
				out = append(out, p)
			}
		}
	}
	return out
}

// mix is splitmix64's finaliser: neighbouring seeds (nodes) give unrelated
// orders.
func mix(x uint64) uint64 {
	x += 0x9e3779b97f4a7c15
	x = (x ^ x>>30) * 0xbf58476d1ce4e5b9
	x = (x ^ x>>27) * 0x94d049bb133111eb
	return x ^ x>>31
}
