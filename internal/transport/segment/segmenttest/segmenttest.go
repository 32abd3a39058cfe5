// Package segmenttest holds what the tests of the bounded-time segment
// share: a real announcer to follow, with its stepdown socket beside.
package segmenttest

import (
	"context"
	"path/filepath"
	"testing"
	"time"

	"github.com/clockwatch/clockwatch/internal/announce"
	"github.com/clockwatch/clockwatch/internal/policy"
	"github.com/clockwatch/clockwatch/internal/transport/socket"
)

// Stepdown runs an announcer with the given hold-down and its stepdown
// server on a socket in a temporary directory, in state ok, until the test
// ends; it returns the announcer (the segment's and the socket's) and the
// socket.
func Stepdown(t testing.TB, holdDown time.Duration) (*announce.Announcer, string) {
	t.Helper()
	cfg := socket.DefaultConfig()
	cfg.Socket = filepath.Join(t.TempDir(), "sd.sock")
	cfg.Heartbeat = 50 * time.Millisecond
	pol := policy.DefaultConfig()
	pol.HoldDown = holdDown
	ann := announce.New(pol, announce.Options{})
	t.Cleanup(ann.Close)
	sd, err := socket.New(cfg, ann, socket.Options{})
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
	ann.ProbeOK("test")
	return ann, cfg.Socket
}
