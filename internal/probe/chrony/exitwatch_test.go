package chrony

import (
	"context"
	"testing"
	"time"

	"github.com/clockwatch/clockwatch/internal/chronydtest"
	"github.com/clockwatch/clockwatch/internal/testtool"
)

// TestExitWatched: with its pid file, a real chronyd's exit is noticed at
// once (chronyd killed by PID: clockwatch_chrony_up 0 within a second), not
// at the next poll (poll_interval 30 s here, so no poll could notice);
// restarted and polled again, the new process is watched. Without the pid
// file nothing notices before the next poll.
func TestExitWatched(t *testing.T) {
	testtool.Short(t)
	t.Parallel()
	for _, tc := range []struct {
		name    string
		pidFile bool
	}{
		{name: "watched", pidFile: true},
		{name: "not watched", pidFile: false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			c := chronydtest.Start(t, chronydtest.Options{})
			cfg := DefaultConfig()
			cfg.Address, cfg.ConfPath = c.Socket, ""
			cfg.PollInterval, cfg.MaxPollInterval, cfg.WatchedMaxPollInterval = 30*time.Second, time.Minute, time.Hour
			cfg.PIDFile = ""
			if tc.pidFile {
				cfg.PIDFile = c.PIDFile
			}
			p := newPoller(cfg, newClient(newNetDialer(cfg), cfg.Timeout, nil), nil)
			ctx, cancel := context.WithCancel(t.Context())
			done := make(chan error, 1)
			go func() { done <- p.Run(ctx) }()
			defer func() {
				cancel()
				if err := <-done; err != nil {
					t.Error(err)
				}
			}()
			waitUntil := func(what string, within time.Duration, cond func() bool) bool {
				t.Helper()
				for deadline := time.Now().Add(within); !cond(); time.Sleep(5 * time.Millisecond) {
					if time.Now().After(deadline) {
						return false
					}
				}
				return true
			}
			up := func() bool { return p.Snapshot().Up }
			if !waitUntil("up", 10*time.Second, func() bool { return up() && p.watching.Load() == tc.pidFile }) {
				t.Fatalf("chronyd not read (up %v, watching %v) within 10 s: %v", up(), p.watching.Load(), p.Snapshot().Err)
			}
			if tc.pidFile {
				if got, want := p.maxAge(), time.Hour+cfg.MaxPollInterval; got <= want {
					t.Errorf("maxAge() = %v while watched, want over %v (polls up to watched_max_poll_interval apart)", got, want)
				}
			}
			for round := range 2 {
				polls := p.Snapshot().Polls
				killed := time.Now()
				c.Stop() // kills this test's chronyd by PID
				noticed := waitUntil("down", time.Second, func() bool { return !up() })
				if !tc.pidFile {
					if noticed {
						t.Fatalf("chronyd's exit noticed within 1 s without a pid file to watch, at poll_interval %v: the test cannot tell the watch from a poll", cfg.PollInterval)
					}
					return
				}
				if !noticed {
					t.Fatalf("round %d: chronyd killed, still up after 1 s: its exit was not watched", round)
				}
				t.Logf("round %d: chronyd's exit noticed in %v, %d poll(s) after", round, time.Since(killed).Round(time.Millisecond), p.Snapshot().Polls-polls)
				// The poll publishes its snapshot (down) before it drops
				// the watch: a moment after, not at once.
				if !waitUntil("unwatched", time.Second, func() bool { return !p.watching.Load() }) {
					t.Errorf("round %d: still watching 1 s after chronyd's exit was noticed", round)
				}
				c.Restart()
				p.Wake() // a clock set would, or the back-off's next poll
				if !waitUntil("up again", 10*time.Second, func() bool { return up() && p.watching.Load() }) {
					t.Fatalf("round %d: restarted chronyd not read and watched within 10 s (up %v, watching %v): %v", round, up(), p.watching.Load(), p.Snapshot().Err)
				}
			}
		})
	}
}
