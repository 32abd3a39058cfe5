package loop

import (
	"context"
	"time"
)

// Every calls poll at once and then every interval until ctx is done. A poll
// that overruns the interval delays the next one (the ticker drops ticks);
// polls never overlap.
func Every(ctx context.Context, interval time.Duration, poll func(context.Context)) {
	t := time.NewTicker(interval)
	defer t.Stop()
	for {
		poll(ctx)
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		}
	}
}
