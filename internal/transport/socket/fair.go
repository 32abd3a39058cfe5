package socket

import (
	"cmp"
	"slices"
)

// orderLocked returns every client in the order a broadcast reaches them,
// made again only when clients came or went since the last one: the
// privileged first (root, clockwatch's uid, stepdown.drill_uids: operators
// and drills), then the others taking turns by uid, each uid's clients in
// the order they came. However many connections one uid holds, a client of
// another uid waits for at most one write per uid before its own (issue
// 32: 2,000 connections of other uids that never read put a subscriber's
// events behind up to 2,000 writes).
func (s *Server) orderLocked() []*client {
	if s.order != nil || len(s.clients) == 0 {
		return s.order
	}
	var first []*client
	byUID := map[uint32][]*client{}
	for c := range s.clients {
		if s.mayDrill(c.cred, c.credErr) {
			first = append(first, c)
			continue
		}
		uid := limitedUID(c.cred, c.credErr)
		byUID[uid] = append(byUID[uid], c)
	}
	byAge := func(a, b *client) int { return cmp.Compare(a.id, b.id) }
	slices.SortFunc(first, byAge)
	turns := make([][]*client, 0, len(byUID))
	for _, cs := range byUID {
		slices.SortFunc(cs, byAge)
		turns = append(turns, cs)
	}
	// The uid whose first client came first takes the first turn.
	slices.SortFunc(turns, func(a, b []*client) int { return byAge(a[0], b[0]) })
	order := make([]*client, 0, len(s.clients))
	order = append(order, first...)
	for i := 0; len(order) < len(s.clients); i++ {
		for _, cs := range turns {
			if i < len(cs) {
				order = append(order, cs[i])
			}
		}
	}
	s.order = order
	return order
}
