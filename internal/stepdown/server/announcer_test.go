package server_test

import (
	"context"
	"sync"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/clockwatch/clockwatch/internal/stepdown/policy"
	"github.com/clockwatch/clockwatch/internal/stepdown/server"
	"github.com/clockwatch/clockwatch/stepdown"
)

// TestSecondTransport subscribes a second transport to the server's
// announcer, as a shared-memory writer would: it receives every
// announcement, in order, with the seq the socket's clients get.
func TestSecondTransport(t *testing.T) {
	t.Parallel()
	cfg := testConfig(t)
	s, err := server.New(cfg, server.Options{})
	if err != nil {
		t.Fatal(err)
	}
	var mu sync.Mutex
	var got []string
	s.Announcer().Subscribe(func(a server.Announcement) {
		mu.Lock()
		defer mu.Unlock()
		got = append(got, a.Message.String())
	})
	runUntilCleanup(t, s)
	s.ProbeOK("test")
	c, hello := dial(t, cfg.Socket)
	s.Step(policy.Step{Seconds: 2})
	var sock []string
	for range 2 { // the stepdown, then the resume after the hold-down
		sock = append(sock, next(t, c).String())
	}
	waitFor(t, "the resume on the second transport", func() bool {
		mu.Lock()
		defer mu.Unlock()
		return len(got) == 3
	})
	mu.Lock()
	defer mu.Unlock()
	if hello.Seq != 1 || !cmp.Equal(got[1:], sock) {
		t.Errorf("second transport got %q, the socket %q after a hello with seq %d", got, sock, hello.Seq)
	}
	if s.Status().State != stepdown.StateOK {
		t.Errorf("state %s", s.Status().State)
	}
}

// runUntilCleanup runs s until the test ends.
func runUntilCleanup(t *testing.T, s *server.Server) {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- s.Run(ctx) }()
	t.Cleanup(func() {
		cancel()
		select {
		case err := <-done:
			if err != nil {
				t.Errorf("Run: %v", err)
			}
		case <-time.After(10 * time.Second):
			t.Error("Run did not return")
		}
	})
	<-s.Ready()
}
