package ntpd

import (
	"context"

	"github.com/clockwatch/clockwatch/internal/ntptest"
	"github.com/clockwatch/clockwatch/internal/timesource"
)

// ParseVars is parseVars, for the fuzz test's own reading of the input.
var ParseVars = parseVars

// ReadingOfSystem polls an ntpd found by "auto" (the default) whose system variables are text (one
// association, its variables as captured) and returns the poller's reading.
func ReadingOfSystem(text []byte) timesource.Reading {
	p := NewPoller(DefaultConfig(), nil)
	r := syncedReplies()
	replies := [][]byte{r[0], ntptest.Mode6Fragment(2, 0x0618, 0, 0, false, text), r[2], r[3]}
	p.client.dial = func(context.Context, string) (Conn, error) { return &replayConn{replies: replies}, nil }
	p.Poll(context.Background())
	return p.Reading()
}
