package socket_test

import (
	"strings"
	"testing"
	"time"

	"github.com/clockwatch/clockwatch/internal/transport/socket"
	"github.com/clockwatch/clockwatch/stepdown"
)

// queuedCreds hands out the credentials of the next clients in the order
// they connect (the test dials one at a time).
func queuedCreds(creds chan socket.Cred) func(int) (socket.Cred, error) {
	return func(int) (socket.Cred, error) { return <-creds, nil }
}

// One application holding every connection it may must neither lock out
// another application nor root's drill.
func TestAdmissionReserveAndShare(t *testing.T) {
	t.Parallel()
	cfg := testConfig(t)
	cfg.MaxClients = 128 // 2 kept for root and clockwatch's uid
	cfg.MaxClientsPerUID = 100
	creds := make(chan socket.Cred, 1)
	start(t, cfg, socket.Options{PeerCred: queuedCreds(creds), SelfUID: 999})
	as := func(uid uint32) (*stepdown.Conn, stepdown.Message) {
		t.Helper()
		return dialAs(t, cfg.Socket, creds, uid)
	}
	for i := range 100 {
		if _, m := as(1000); m.Type != stepdown.TypeHello {
			t.Fatalf("uid 1000 connection %d: %v", i, m)
		}
	}
	_, m := as(1000)
	if m.Code != stepdown.CodeBusy || !strings.Contains(m.Error, "max_clients_per_uid") {
		t.Fatalf("uid 1000's 101st connection: %v, want busy naming stepdown.max_clients_per_uid", m)
	}
	for i := range 26 {
		if _, m := as(1001); m.Type != stepdown.TypeHello {
			t.Fatalf("uid 1001 connection %d (another application): %v", i, m)
		}
	}
	// 126 held: the last 2 are kept for root and clockwatch's uid.
	if _, m := as(1002); m.Code != stepdown.CodeBusy || !strings.Contains(m.Error, "kept for root") {
		t.Fatalf("uid 1002 with the reserve left: %v, want busy", m)
	}
	c, m := as(0)
	if m.Type != stepdown.TypeHello {
		t.Fatalf("root with the reserve left: %v", m)
	}
	c.Send(stepdown.Message{Type: stepdown.TypeDrill, HoldSeconds: 0.05})
	if m := next(t, c); m.Type != stepdown.TypeStepdown || !m.Drill {
		t.Fatalf("root's drill: %v", m)
	}
	if _, m := as(999); m.Type != stepdown.TypeHello {
		t.Fatalf("clockwatch's uid with the reserve left: %v", m)
	}
	if _, m := as(0); m.Code != stepdown.CodeBusy {
		t.Fatalf("past max_clients: %v, want busy", m)
	}
}

// A drill's hold_seconds is checked as a number of seconds, with a message
// that says the bounds, never a wrapped duration or a silent default.
func TestDrillHoldBounds(t *testing.T) {
	t.Parallel()
	cfg := testConfig(t)
	start(t, cfg, socket.Options{})
	for _, tc := range []struct {
		hold float64
		want string
	}{
		{1e300, "hold_seconds must be between 0.001 and 300 (stepdown.max_drill_hold 5m0s), got 1e+300"},
		{1e-10, "hold_seconds must be between 0.001 and 300 (stepdown.max_drill_hold 5m0s), got 1e-10"},
		{-1, "hold_seconds must be between 0.001 and 300 (stepdown.max_drill_hold 5m0s), got -1"},
		{301, "hold_seconds must be between 0.001 and 300 (stepdown.max_drill_hold 5m0s), got 301"},
	} {
		c, _ := dial(t, cfg.Socket)
		c.Send(stepdown.Message{Type: stepdown.TypeDrill, HoldSeconds: tc.hold})
		if m := next(t, c); m.Code != stepdown.CodeBadRequest || m.Error != tc.want {
			t.Errorf("hold_seconds %g: %v, want bad_request %q", tc.hold, m, tc.want)
		}
	}
}

// TestConnectRateRefuses: a uid that connects and closes faster than its
// rate allows is refused busy, saying why, before any hello (issue 32 item
// 1: a loop of connects and closes made the daemon greet and tear down
// thousands of subscribers a second). A uid may open as many as its share
// at once, and one at its share is refused by the share, not the rate;
// root and clockwatch's uid are never limited.
func TestConnectRateRefuses(t *testing.T) {
	t.Parallel()
	cfg := testConfig(t)
	cfg.Heartbeat = time.Hour
	cfg.MaxClientsPerUID = 100
	creds := make(chan socket.Cred, 1)
	s, _ := start(t, cfg, socket.Options{PeerCred: queuedCreds(creds), SelfUID: 999})
	dial := func(uid uint32) (*stepdown.Conn, stepdown.Message) {
		t.Helper()
		return dialAs(t, cfg.Socket, creds, uid)
	}
	// Its whole share at once, held, then more: refused by the share.
	var held []*stepdown.Conn
	for i := range cfg.MaxClientsPerUID {
		c, m := dial(1000)
		if m.Type != stepdown.TypeHello {
			t.Fatalf("uid 1000, connection %d of its share: %v", i+1, m)
		}
		held = append(held, c)
	}
	for range 3 {
		c, m := dial(1000)
		c.Close()
		if m.Code != stepdown.CodeBusy || !strings.Contains(m.Error, "max_clients_per_uid") || strings.Contains(m.Error, "too often") {
			t.Fatalf("uid 1000 at its share: %v, want busy naming its share", m)
		}
	}
	for _, c := range held {
		c.Close()
	}
	waitFor(t, "uid 1000's connections gone", func() bool { return s.Subscribers() == 0 })
	// Connect and close in a loop: the rate (the share's tokens were spent).
	hellos := 0
	var refusal stepdown.Message
	for range 1000 {
		c, m := dial(1000)
		c.Close()
		if m.Type != stepdown.TypeHello {
			refusal = m
			break
		}
		hellos++
	}
	if hellos > 200 {
		t.Errorf("uid 1000 had %d more hellos after spending its burst, want what 32 a second refilled", hellos)
	}
	if refusal.Code != stepdown.CodeBusy || !strings.Contains(refusal.Error, "connects too often") {
		t.Errorf("the refusal: %v, want busy saying the uid connects too often", refusal)
	}
	for _, uid := range []uint32{0, 999} {
		for i := range 300 {
			c, m := dial(uid)
			c.Close()
			if m.Type != stepdown.TypeHello {
				t.Fatalf("uid %d, connection %d: %v, want a hello (never rate limited)", uid, i, m)
			}
		}
	}
	if got := metricValue(t, s, socket.MetricDisconnects, "cause", socket.CauseConnectRate); got < 1 {
		t.Errorf("disconnects{cause=%q} = %v, want at least 1", socket.CauseConnectRate, got)
	}
}
