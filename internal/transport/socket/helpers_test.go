package socket_test

import (
	"context"
	"errors"
	"path/filepath"
	"testing"
	"time"

	"github.com/clockwatch/clockwatch/internal/announce"
	"github.com/clockwatch/clockwatch/internal/policy"
	"github.com/clockwatch/clockwatch/internal/transport/socket"
	"github.com/clockwatch/clockwatch/stepdown"
)

// policyConfig is policy.Config, named to be embedded beside socket.Config.
type policyConfig = policy.Config

// testCfg is the stepdown section as the daemon reads it: the socket's
// settings (Config) and the announcer's policy's (hold-down, triggers).
type testCfg struct {
	socket.Config
	policyConfig
}

// testConfig is a fast configuration on a socket in a temporary directory.
func testConfig(t testing.TB) testCfg {
	cfg := testCfg{socket.DefaultConfig(), policy.DefaultConfig()}
	cfg.Socket = filepath.Join(t.TempDir(), "sd.sock")
	cfg.Heartbeat = 20 * time.Millisecond
	cfg.HoldDown = 100 * time.Millisecond
	return cfg
}

// newAnnouncer returns an announcer with cfg's policy, closed when the test
// ends, as the daemon makes one.
func newAnnouncer(t testing.TB, cfg testCfg, ao ...announce.Options) *announce.Announcer {
	t.Helper()
	var o announce.Options
	if len(ao) > 0 {
		o = ao[0]
	}
	ann := announce.New(cfg.policyConfig, o)
	t.Cleanup(ann.Close)
	return ann
}

// newServer returns a server and its announcer (ao: at most one).
func newServer(t testing.TB, cfg testCfg, opts socket.Options, ao ...announce.Options) (*socket.Server, *announce.Announcer) {
	t.Helper()
	ann := newAnnouncer(t, cfg, ao...)
	s, err := socket.New(cfg.Config, ann, opts)
	if err != nil {
		t.Fatal(err)
	}
	return s, ann
}

// start runs a server until the test ends and waits until it listens and is
// in state ok; it returns the server and its announcer (ao: at most one).
func start(t testing.TB, cfg testCfg, opts socket.Options, ao ...announce.Options) (*socket.Server, *announce.Announcer) {
	t.Helper()
	s, ann := newServer(t, cfg, opts, ao...)
	run(t, s, ann)
	return s, ann
}

// run runs s until the test ends and waits until it listens and is in state
// ok.
func run(t testing.TB, s *socket.Server, ann *announce.Announcer) {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- s.Run(ctx) }()
	t.Cleanup(func() {
		cancel()
		if err := <-done; err != nil {
			t.Errorf("Run: %v", err)
		}
	})
	select {
	case <-s.Ready():
	case err := <-done:
		t.Fatalf("Run: %v", err)
	}
	ann.ProbeOK("test")
}

// dial connects a raw client and reads its hello.
func dial(t testing.TB, path string) (*stepdown.Conn, stepdown.Message) {
	t.Helper()
	c, err := stepdown.Dial(context.Background(), path)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { c.Close() })
	m := next(t, c)
	if m.Type != stepdown.TypeHello {
		t.Fatalf("first message %v, want a hello", m)
	}
	return c, m
}

// dialAs connects to path as uid (the server's PeerCred is queuedCreds of
// creds), closed when the test ends, and returns the first message.
func dialAs(t testing.TB, path string, creds chan<- socket.Cred, uid uint32) (*stepdown.Conn, stepdown.Message) {
	t.Helper()
	creds <- socket.Cred{PID: 1, UID: uid, GID: uid}
	c, err := stepdown.Dial(context.Background(), path)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { c.Close() })
	return c, next(t, c)
}

// next reads the next message that is not a heartbeat.
func next(t testing.TB, c *stepdown.Conn) stepdown.Message {
	t.Helper()
	for {
		c.SetReadDeadline(time.Now().Add(10 * time.Second))
		m, err := c.Read()
		if err != nil {
			t.Fatalf("reading: %v", err)
		}
		if m.Type != stepdown.TypeHeartbeat {
			return m
		}
	}
}

// readErr reads until the connection ends and returns the error messages seen.
func untilClosed(t testing.TB, c *stepdown.Conn) []stepdown.Message {
	t.Helper()
	var got []stepdown.Message
	for {
		c.SetReadDeadline(time.Now().Add(10 * time.Second))
		m, err := c.Read()
		if err != nil {
			if errors.Is(err, context.DeadlineExceeded) {
				t.Fatal("connection not closed")
			}
			return got
		}
		if m.Type == stepdown.TypeError {
			got = append(got, stepdown.Message{Type: m.Type, Code: m.Code})
		}
	}
}

// waitFor polls cond until it holds.
func waitFor(t testing.TB, what string, cond func() bool) {
	t.Helper()
	waitWithin(t, what, 10*time.Second, cond)
}

// waitWithin is waitFor with its own bound.
func waitWithin(t testing.TB, what string, within time.Duration, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(within)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("timed out waiting for %s", what)
		}
		time.Sleep(2 * time.Millisecond)
	}
}

// runForever runs s until the process is killed.
func runForever(s *socket.Server) error { return s.Run(context.Background()) }
