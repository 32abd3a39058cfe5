package server

import (
	"context"
	"time"
)

// Feed is a task that hands every value from ch to apply until ctx is done
// or ch is closed. The daemon uses it to connect the step detector's event
// bus to the server without this package importing the detector:
//
//	g.Go(func() error { return server.Feed(ctx, sub.C(), func(e step.Event) { ... sd.Step(...) }) })
func Feed[T any](ctx context.Context, ch <-chan T, apply func(T)) error {
	for {
		select {
		case <-ctx.Done():
			return nil
		case v, ok := <-ch:
			if !ok {
				return nil
			}
			apply(v)
		}
	}
}

// PollChrony is a task that feeds read()'s chrony reading to the server
// every interval (chrony's own poll interval is a good choice) until ctx is
// done. read must not block: the chrony poller's Status does not.
func (s *Server) PollChrony(ctx context.Context, interval time.Duration, read func() ChronyReading) error {
	t := time.NewTicker(interval)
	defer t.Stop()
	for {
		s.Chrony(read())
		select {
		case <-ctx.Done():
			return nil
		case <-t.C:
		}
	}
}
