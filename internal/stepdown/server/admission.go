package server

import (
	"fmt"
	"math"
	"time"
)

// Admission keeps the socket usable for everyone when some clients hold many
// connections: a reserve that only privileged peers (root, clockwatch's own
// uid and stepdown.drill_uids, who run drills and diagnose) may use, and a
// share per uid for everyone else.

// reserved is how many of max_clients only privileged peers may take: a
// 64th, at most 1024 (64 of the default 4096; none below 64).
func (c Config) reserved() int { return min(c.MaxClients/64, 1024) }

// admitLocked decides whether a peer with cred may take one more connection;
// when not, it returns why, for the peer and the log.
func (s *Server) admitLocked(cr Cred, credErr error) (ok bool, why string) {
	n := len(s.clients)
	if n >= s.cfg.MaxClients {
		return false, fmt.Sprintf("too many clients (stepdown.max_clients %d)", s.cfg.MaxClients)
	}
	if s.mayDrill(cr, credErr) {
		return true, ""
	}
	if free := s.cfg.MaxClients - s.cfg.reserved(); n >= free {
		return false, fmt.Sprintf("too many clients: the last %d of stepdown.max_clients (%d) are kept for root and clockwatch's uid",
			s.cfg.reserved(), s.cfg.MaxClients)
	}
	uid := cr.UID
	if credErr != nil {
		uid = math.MaxUint32 // peers without credentials share one count
	}
	held := 0
	for c := range s.clients {
		cu := c.cred.UID
		if c.credErr != nil {
			cu = math.MaxUint32
		}
		if cu == uid && !s.mayDrill(c.cred, c.credErr) {
			held++
		}
	}
	if held >= s.cfg.MaxClientsPerUID {
		return false, fmt.Sprintf("uid %d holds %d connections, stepdown.max_clients_per_uid", cr.UID, held)
	}
	return true, ""
}

// drillHold turns a drill request's hold_seconds into a duration: 0 is the
// default, anything else must lie between MinDrillHold and
// stepdown.max_drill_hold (a float64 past ~292 years would overflow the
// conversion, and a hold below a millisecond would be over before a client
// saw it).
func drillHold(seconds float64, maxHold time.Duration) (time.Duration, error) {
	switch {
	case seconds == 0:
		return min(defaultDrillHold, maxHold), nil
	case math.IsNaN(seconds) || seconds < MinDrillHold.Seconds() || seconds > maxHold.Seconds():
		return 0, fmt.Errorf("hold_seconds must be between %g and %g (stepdown.max_drill_hold %s), got %g",
			MinDrillHold.Seconds(), maxHold.Seconds(), maxHold, seconds)
	}
	return time.Duration(seconds * float64(time.Second)), nil
}
