package socket_test

import (
	"testing"
	"time"

	"github.com/clockwatch/clockwatch/internal/pulse"
	"github.com/clockwatch/clockwatch/internal/transport/socket"
	"github.com/clockwatch/clockwatch/stepdown"
)

// TestHeartbeatAfterRest: with no subscriber the heartbeat's period rests
// (pulse.Rest between beats, so an idle daemon does not wake every second);
// a subscriber that connects then gets its heartbeats at the heartbeat's
// period from its hello on, not after the rest: the admission wakes the
// pulse.
func TestHeartbeatAfterRest(t *testing.T) {
	t.Parallel()
	cfg := testConfig(t)
	cfg.Heartbeat = 50 * time.Millisecond
	s, _ := start(t, cfg, socket.Options{})
	// Long enough for a few beats with nobody to beat for: resting now.
	time.Sleep(10 * cfg.Heartbeat)
	c, _ := dial(t, s.Addr())
	begin := time.Now()
	for i := range 3 {
		c.SetReadDeadline(time.Now().Add(pulse.Rest + 5*time.Second))
		m, err := c.Read()
		if err != nil {
			t.Fatalf("heartbeat %d: %v", i+1, err)
		}
		if m.Type != stepdown.TypeHeartbeat {
			t.Fatalf("message %d: %v, want a heartbeat", i+1, m)
		}
	}
	// Three beats 50 ms apart; a missed wake-up would take pulse.Rest (8 s).
	if took := time.Since(begin); took > 2*time.Second {
		t.Errorf("three heartbeats took %v after the hello (heartbeat %v, rest %v): the admission did not wake the pulse", took, cfg.Heartbeat, pulse.Rest)
	}
}
