package server

import (
	"errors"
	"slices"
	"testing"
)

// A broadcast writes to the first client of each uid (in the order the uids
// came), then the second of each, and so on: one uid's many clients delay
// another uid's first by one write each at most.
func TestFanoutOrderTakesUIDsInTurn(t *testing.T) {
	t.Parallel()
	s := &Server{clients: map[*client]struct{}{}, byUID: map[uint32]*uidClients{}}
	var names = map[*client]string{}
	add := func(name string, uid uint32, credErr error) *client {
		c := &client{cred: Cred{UID: uid}, credErr: credErr}
		names[c] = name
		s.addLocked(c)
		return c
	}
	a1 := add("a1", 1000, nil)
	add("a2", 1000, nil)
	add("b1", 0, nil)
	add("a3", 1000, nil)
	add("n1", 7, errors.New("no credentials")) // counted under math.MaxUint32
	add("c1", 2000, nil)
	add("a4", 1000, nil)
	add("c2", 2000, nil)
	order := func() []string {
		var got []string
		for _, c := range s.fanoutOrderLocked() {
			got = append(got, names[c])
		}
		return got
	}
	if got, want := order(), []string{"a1", "b1", "n1", "c1", "a2", "c2", "a3", "a4"}; !slices.Equal(got, want) {
		t.Errorf("fan-out order %v, want %v", got, want)
	}
	// Uid 1000's first client goes: its others keep uid 1000's place.
	s.removeLocked(a1)
	if got, want := order(), []string{"a4", "b1", "n1", "c1", "a2", "c2", "a3"}; !slices.Equal(got, want) {
		t.Errorf("after a1 left: %v, want %v", got, want)
	}
	for c := range s.clients {
		if c.cred.UID == 2000 {
			s.removeLocked(c)
		}
	}
	if got, want := order(), []string{"a4", "b1", "n1", "a2", "a3"}; !slices.Equal(got, want) {
		t.Errorf("after uid 2000 left: %v, want %v", got, want)
	}
	if s.removeLocked(a1) {
		t.Error("a client removed twice")
	}
	if len(s.uids) != 3 || len(s.byUID) != 3 {
		t.Errorf("uids %v, groups %d: want 3 of each", s.uids, len(s.byUID))
	}
}
