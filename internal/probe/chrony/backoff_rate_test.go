package chrony

import (
	"context"
	"errors"
	"testing"
	"time"
)

// TestPollRateAfter31Failures runs the poller itself for 300 ms from its
// 31st failed poll on, chrony.poll_interval 9 s: the wrapped back-off made
// it poll 23,000 times a second for good (issue 24, item 5); now it waits
// max_poll_interval.
func TestPollRateAfter31Failures(t *testing.T) {
	t.Parallel()
	cfg := DefaultConfig()
	cfg.PollInterval, cfg.MaxPollInterval = 9*time.Second, time.Hour
	d := &replayDialer{dir: "testdata/unix-synced", dialErr: errors.New("chronyd is not running")}
	p := newPoller(cfg, newClient(d, time.Second, nil), nil)
	for range 30 {
		p.Poll(context.Background())
	}
	ctx, cancel := context.WithTimeout(context.Background(), 300*time.Millisecond)
	defer cancel()
	before := p.Snapshot().Polls
	p.Run(ctx)
	polls := p.Snapshot().Polls - before
	t.Logf("polls in 300 ms from the 31st failure on: %d (%.0f a second)", polls, float64(polls)/0.3)
	if polls > 1 {
		t.Errorf("%d polls in 300 ms after the 31st failure, want 1 (then a wait of %v)", polls, cfg.MaxPollInterval)
	}
}
