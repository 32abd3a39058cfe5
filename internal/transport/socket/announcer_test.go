package socket_test

import (
	"context"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/clockwatch/clockwatch/internal/announce"
	"github.com/clockwatch/clockwatch/internal/policy"
	"github.com/clockwatch/clockwatch/internal/transport/socket"
	"github.com/clockwatch/clockwatch/stepdown"
)

// TestSecondTransport subscribes a second transport to the announcer beside
// the socket, as the bounded-time segment does: it receives every
// announcement, in order, with the seq the socket's clients get.
func TestSecondTransport(t *testing.T) {
	t.Parallel()
	cfg := testConfig(t)
	s, ann := newServer(t, cfg, socket.Options{})
	sub := ann.Subscribe("test", announce.Buffered(8))
	defer sub.Close()
	runUntilCleanup(t, s)
	ann.ProbeOK("test")
	c, hello := dial(t, cfg.Socket)
	ann.Step(policy.Step{Seconds: 2})
	var sock []string
	for range 2 { // the stepdown, then the resume after the hold-down
		sock = append(sock, next(t, c).String())
	}
	var got []string
	for range 3 { // the start's resume, the stepdown, the resume
		select {
		case a := <-sub.C():
			got = append(got, a.Message.String())
		case <-time.After(10 * time.Second):
			t.Fatalf("the second transport got %q only", got)
		}
	}
	if hello.Seq != 1 || !cmp.Equal(got[1:], sock) {
		t.Errorf("second transport got %q, the socket %q after a hello with seq %d", got, sock, hello.Seq)
	}
	if st := sub.Latest(); st.State != stepdown.StateOK || st.Seq != 3 {
		t.Errorf("Latest() = %+v, want state ok at seq 3", st)
	}
}

// runUntilCleanup runs s until the test ends.
func runUntilCleanup(t *testing.T, s *socket.Server) {
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
