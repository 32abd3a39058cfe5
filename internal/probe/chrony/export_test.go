package chrony

import (
	"context"
	"time"

	"github.com/clockwatch/clockwatch/internal/timesource"
)

// ReadingOfTracking polls a replayed chronyd (the captured unix-synced
// replies) whose tracking reply is tracking, and returns the reading.
func ReadingOfTracking(tracking []byte) timesource.Reading {
	d := &replayDialer{dir: "testdata/unix-synced", replies: map[string][]byte{"tracking": tracking}}
	p := newPoller(DefaultConfig(), newClient(d, time.Second, nil), nil)
	p.Poll(context.Background())
	return p.Reading()
}
