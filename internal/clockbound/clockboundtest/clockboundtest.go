// Package clockboundtest holds what the tests of the bounded-time segment
// share: a real stepdown server to follow.
package clockboundtest

import (
	"context"
	"path/filepath"
	"testing"
	"time"

	"github.com/clockwatch/clockwatch/stepdown/server"
)

// Stepdown runs a stepdown server on a socket in a temporary directory with
// the given hold-down, in state ok, until the test ends; it returns the
// server and its socket.
func Stepdown(t testing.TB, holdDown time.Duration) (*server.Server, string) {
	t.Helper()
	cfg := server.DefaultConfig()
	cfg.Socket = filepath.Join(t.TempDir(), "sd.sock")
	cfg.Heartbeat = 50 * time.Millisecond
	cfg.HoldDown = holdDown
	sd, err := server.New(cfg, server.Options{})
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- sd.Run(ctx) }()
	t.Cleanup(func() {
		cancel()
		if err := <-done; err != nil {
			t.Errorf("stepdown server: %v", err)
		}
	})
	<-sd.Ready()
	sd.ProbeOK("test")
	return sd, cfg.Socket
}
