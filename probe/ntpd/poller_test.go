package ntpd

import (
	"bytes"
	"context"
	"errors"
	"log/slog"
	"strings"
	"testing"
	"time"
)

func TestPoller(t *testing.T) {
	t.Parallel()
	var logs bytes.Buffer
	p := NewPoller(DefaultConfig(), slog.New(slog.NewTextHandler(&logs, nil)))
	down := true
	p.client.dial = func(context.Context, string) (Conn, error) {
		if down {
			return nil, errors.New("connection refused")
		}
		return &replayConn{replies: syncedReplies()}, nil
	}
	for range 2 {
		p.Poll(context.Background())
	}
	s := p.Snapshot()
	if s.Up || s.HaveData || s.Failures != 2 || !strings.Contains(s.Err.Error(), "opening UDP to ntpd at 127.0.0.1:123") {
		t.Errorf("while ntpd is away: %+v", s)
	}
	down = false
	p.Poll(context.Background())
	s = p.Snapshot()
	if !s.Up || !s.HaveData || s.Polls != 3 || s.Data.System.Stratum != 2 || time.Since(s.LastSuccess) > time.Minute {
		t.Errorf("after ntpd answered: %+v", s)
	}
	if n := strings.Count(logs.String(), "cannot read ntpd"); n != 1 {
		t.Errorf("logged the failure %d times, want once:\n%s", n, logs.String())
	}
	if !strings.Contains(logs.String(), "ntpd answers again") {
		t.Errorf("recovery not logged:\n%s", logs.String())
	}
}
