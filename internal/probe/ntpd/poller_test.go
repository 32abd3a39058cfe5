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
	cfg := DefaultConfig()
	cfg.Address = "127.0.0.1:123" // pinned: not answering is down, not absent
	p := NewPoller(cfg, slog.New(slog.NewTextHandler(&logs, nil)))
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
	if r := p.Reading(); !r.Found || !r.Up || r.IsAbsent() {
		t.Errorf("reading after ntpd answered: %+v", r)
	}
}

// TestPollerAuto: "auto" without ntpd is absent (no poll counted, nothing
// logged, a reading that raises nothing); once found, a failure is ntpd
// lost.
func TestPollerAuto(t *testing.T) {
	t.Parallel()
	var logs bytes.Buffer
	p := NewPoller(DefaultConfig(), slog.New(slog.NewTextHandler(&logs, nil)))
	if r := p.Reading(); !r.Pending() {
		t.Errorf("reading before the first poll: %+v, want pending", r)
	}
	down := true
	p.client.dial = func(context.Context, string) (Conn, error) {
		if down {
			return nil, errors.New("connection refused")
		}
		return &replayConn{replies: syncedReplies()}, nil
	}
	p.Poll(context.Background())
	p.Poll(context.Background())
	s := p.Snapshot()
	r := p.Reading()
	if s.Found || s.Polls != 0 || s.Failures != 0 || !r.IsAbsent() || r.Pending() || !strings.Contains(r.Err.Error(), "ntpd is absent: no mode 6 answer on 127.0.0.1:123") {
		t.Errorf("auto without ntpd: %+v\nreading %+v: want absent, no polls counted", s, r)
	}
	if logs.Len() != 0 {
		t.Errorf("an absent ntpd logged:\n%s", logs.String())
	}
	down = false
	p.Poll(context.Background())
	if s = p.Snapshot(); !s.Found || !s.Up || s.Polls != 1 || !strings.Contains(logs.String(), "ntpd answers") {
		t.Errorf("after ntpd answered: %+v\n%s", s, logs.String())
	}
	down = true
	p.Poll(context.Background())
	if r = p.Reading(); !r.Found || r.Up || r.IsAbsent() || p.Snapshot().Failures != 1 {
		t.Errorf("found, then gone: %+v, want lost (found, down), not absent", r)
	}
}
