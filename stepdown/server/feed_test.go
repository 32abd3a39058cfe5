package server_test

import (
	"context"
	"sync/atomic"
	"testing"
	"time"

	"github.com/clockwatch/clockwatch/stepdown"
	"github.com/clockwatch/clockwatch/stepdown/policy"
	"github.com/clockwatch/clockwatch/stepdown/server"
)

func TestFeedAndPollChrony(t *testing.T) {
	t.Parallel()
	cfg := testConfig(t)
	s := start(t, cfg, server.Options{})
	c, _ := dial(t, cfg.Socket)
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()

	// Step events arrive on a channel, as from the step detector's bus.
	type detectorEvent struct {
		step  time.Duration
		epoch uint64
	}
	events := make(chan detectorEvent, 1)
	fed := make(chan error, 1)
	go func() {
		fed <- server.Feed(ctx, events, func(e detectorEvent) {
			s.Step(policy.Step{Seconds: e.step.Seconds(), Epoch: e.epoch})
		})
	}()
	events <- detectorEvent{step: -2 * time.Second, epoch: 9}
	if m := next(t, c); m.Reason != stepdown.ReasonStep || m.Epoch != 9 || *m.StepSeconds != -2 {
		t.Fatalf("step: %v", m)
	}
	close(events)
	if err := <-fed; err != nil {
		t.Fatal(err)
	}
	next(t, c) // the resume after the hold-down

	var offset atomic.Value
	offset.Store(0.0)
	polled := make(chan error, 1)
	go func() {
		polled <- s.PollChrony(ctx, 5*time.Millisecond, func() server.ChronyReading {
			return server.ChronyReading{Valid: true, Up: true, Synchronised: true, SystemOffset: offset.Load().(float64)}
		})
	}()
	offset.Store(3.0)
	if m := next(t, c); m.Reason != stepdown.ReasonOffset || *m.OffsetSeconds != 3 {
		t.Fatalf("offset: %v", m)
	}
	cancel()
	if err := <-polled; err != nil {
		t.Fatal(err)
	}
}
