package chrony

import (
	"bytes"
	"context"
	"errors"
	"log/slog"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
)

func TestPollerStates(t *testing.T) {
	t.Parallel()
	var logs bytes.Buffer
	logger := slog.New(slog.NewTextHandler(&logs, &slog.HandlerOptions{ReplaceAttr: func(_ []string, a slog.Attr) slog.Attr {
		if a.Key == slog.TimeKey {
			return slog.Attr{}
		}
		return a
	}}))
	d := &replayDialer{dir: "testdata/unix-synced"}
	cfg := DefaultConfig()
	p := newPoller(cfg, newClient(d, time.Second, nil), logger)

	if st := p.Status(); st.Valid {
		t.Errorf("Status() before any poll = %+v, want not valid", st)
	}
	if age := p.Snapshot().Age(time.Now()); age != -1 {
		t.Errorf("Age() before any poll = %v, want -1", age)
	}

	p.Poll(context.Background())
	s := p.Snapshot()
	if !s.Up || s.Err != nil || !s.HaveData || s.Polls != 1 || s.Failures != 0 || s.Transport != TransportUnix {
		t.Fatalf("after a good poll: %+v", s)
	}
	st := p.Status()
	want := Status{Valid: true, Up: true, SystemOffset: s.Data.Tracking.SystemOffset, Leap: LeapNormal, Synchronised: true,
		ErrorBound: -s.Data.Tracking.SystemOffset + s.Data.Tracking.RootDispersion + s.Data.Tracking.RootDelay/2, LastSuccess: s.LastSuccess}
	if diff := cmp.Diff(want, st); diff != "" {
		t.Errorf("Status() (-want +got):\n%s", diff)
	}

	// chronyd goes away for three polls: one log line, data kept.
	d.dialErr = errors.New("chronyd's socket /run/chrony/chronyd.sock does not exist")
	p.client.Close()
	for range 3 {
		p.Poll(context.Background())
	}
	s = p.Snapshot()
	if s.Up || s.Err == nil || !s.HaveData || s.Failures != 3 || s.Polls != 4 {
		t.Errorf("while chronyd is away: up=%v err=%v haveData=%v failures=%d polls=%d", s.Up, s.Err, s.HaveData, s.Failures, s.Polls)
	}
	if st := p.Status(); !st.Valid || st.Up {
		t.Errorf("Status() while away = %+v, want valid, not up", st)
	}
	d.dialErr = nil
	p.Poll(context.Background())
	p.Poll(context.Background())
	wantLogs := `level=ERROR msg="cannot read chronyd" err="chronyd's socket /run/chrony/chronyd.sock does not exist"
level=INFO msg="chronyd answers again" transport=unix address=replay:testdata/unix-synced
`
	if diff := cmp.Diff(wantLogs, logs.String()); diff != "" {
		t.Errorf("logs (-want +got):\n%s", diff)
	}
}

func TestPollerRun(t *testing.T) {
	t.Parallel()
	d := &replayDialer{dir: "testdata/unix-synced"}
	cfg := DefaultConfig()
	cfg.PollInterval = time.Millisecond
	cfg.ConfPath = "testdata/does-not-exist.conf"
	p := newPoller(cfg, newClient(d, time.Second, nil), nil)
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error)
	go func() { done <- p.Run(ctx) }()
	for p.Snapshot().Polls < 3 {
		time.Sleep(time.Millisecond)
	}
	cancel()
	if err := <-done; err != nil {
		t.Errorf("Run() = %v, want nil on cancellation", err)
	}
	s := p.Snapshot()
	if s.AuditErr == nil || !strings.Contains(s.AuditErr.Error(), "does-not-exist.conf") {
		t.Errorf("AuditErr = %v, want the missing file named", s.AuditErr)
	}
	if p.client.conn != nil {
		t.Errorf("connection still open after Run returned")
	}
}
