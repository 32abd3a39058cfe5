package socket_test

import (
	"net"
	"testing"
	"time"

	"github.com/clockwatch/clockwatch/internal/transport/socket"
)

// TestPauseShorterThanQueueKeepsClient: a client that stops reading is
// disconnected when its queue is full, not when one write has waited
// write_timeout: with 20 ms heartbeats and a 20 ms write_timeout, a client
// that reads nothing for 600 ms (30 heartbeats, more than the kernel's send
// buffer holds, fewer than the queue's 64) stays; one that reads nothing
// for good is dropped as a laggard, never for a write error.
func TestPauseShorterThanQueueKeepsClient(t *testing.T) {
	t.Parallel()
	cfg := testConfig(t)
	cfg.WriteTimeout = 20 * time.Millisecond
	s, _ := start(t, cfg, socket.Options{})
	c, err := net.Dial("unix", cfg.Socket)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	time.Sleep(600 * time.Millisecond)
	if n := s.Subscribers(); n != 1 {
		t.Fatalf("after a 600 ms pause: %d subscribers, want the paused one", n)
	}
	deadline := time.Now().Add(20 * time.Second)
	for s.Subscribers() > 0 && time.Now().Before(deadline) {
		time.Sleep(50 * time.Millisecond)
	}
	if n := s.Subscribers(); n != 0 {
		t.Fatalf("a client that never reads is still connected after 20 s")
	}
	if got := metricValue(t, s, socket.MetricDisconnects, "cause", socket.CauseLaggard); got != 1 {
		t.Errorf("disconnects{cause=laggard} = %v, want 1", got)
	}
	if got := metricValue(t, s, socket.MetricDisconnects, "cause", socket.CauseWriteError); got != 0 {
		t.Errorf("disconnects{cause=write_error} = %v, want 0", got)
	}
}
