package loop

import (
	"context"
	"testing"
	"time"
)

func TestEvery(t *testing.T) {
	t.Parallel()
	ctx, cancel := context.WithCancel(context.Background())
	n := 0
	Every(ctx, time.Millisecond, func(context.Context) {
		n++
		if n == 3 {
			cancel()
		}
	})
	if n != 3 {
		t.Errorf("polled %d times, want 3 (the first at once, then until cancelled)", n)
	}
}
