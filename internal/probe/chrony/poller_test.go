package chrony

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net"
	"os"
	"slices"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/clockwatch/clockwatch/internal/timesource"
)

// untimedLogger logs text to w without the time, for comparing.
func untimedLogger(w io.Writer) *slog.Logger {
	return slog.New(slog.NewTextHandler(w, &slog.HandlerOptions{ReplaceAttr: func(_ []string, a slog.Attr) slog.Attr {
		if a.Key == slog.TimeKey {
			return slog.Attr{}
		}
		return a
	}}))
}

func TestPollerStates(t *testing.T) {
	t.Parallel()
	var logs bytes.Buffer
	logger := untimedLogger(&logs)
	d := &replayDialer{dir: "testdata/unix-synced"}
	cfg := DefaultConfig()
	p := newPoller(cfg, newClient(d, time.Second, nil), logger)

	if r := p.Reading(); r.HasData || !r.Pending() {
		t.Errorf("Reading() before any poll = %+v, want pending, no data", r)
	}
	if age := p.Snapshot().Age(time.Now()); age != -1 {
		t.Errorf("Age() before any poll = %v, want -1", age)
	}

	p.Poll(context.Background())
	s := p.Snapshot()
	if !s.Up || s.Err != nil || !s.HaveData || s.Polls != 1 || s.Failures != 0 || s.Transport != TransportUnix {
		t.Fatalf("after a good poll: %+v", s)
	}
	r := p.Reading()
	tr := s.Data.Tracking
	want := timesource.Reading{Source: SourceName, Role: timesource.Authoritative, Found: true, Up: true, HasData: true,
		Synchronized: true, LastSuccess: s.LastSuccess, Leap: timesource.LeapNone, Detail: r.Detail}
	want.SetFigures(timesource.NTPFigures(SourceName, tr.SystemOffset, tr.RootDispersion, tr.RootDelay))
	if diff := cmp.Diff(want, r); diff != "" {
		t.Errorf("Reading() (-want +got):\n%s", diff)
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
	if r := p.Reading(); !r.HasData || r.Up {
		t.Errorf("Reading() while away = %+v, want its data, not up", r)
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

// TestPollerLogsAReasonOnce: in auto mode the address alternates between
// polls, and with it the wording of the error; the reason is the same, so
// one line is logged for the outage, and one more only for a new reason.
func TestPollerLogsAReasonOnce(t *testing.T) {
	t.Parallel()
	var logs bytes.Buffer
	logger := untimedLogger(&logs)
	d := &replayDialer{dir: "testdata/unix-synced"}
	p := newPoller(DefaultConfig(), newClient(d, time.Second, nil), logger)
	refused := func(addr string) error {
		return fmt.Errorf("requesting tracking from %s: %w", addr,
			&net.OpError{Op: "read", Net: "udp", Err: os.NewSyscallError("recvfrom", syscall.ECONNREFUSED)})
	}
	p.Poll(context.Background()) // chronyd answered: what follows is an outage
	p.client.Close()
	for i := range 6 {
		d.dialErr = refused([]string{"127.0.0.1:323", "[::1]:323"}[i%2])
		p.Poll(context.Background())
	}
	d.dialErr = fmt.Errorf("opening UDP to chronyd's command port [::1]:323: %w", syscall.EADDRNOTAVAIL)
	p.Poll(context.Background())
	d.dialErr = refused("127.0.0.1:323")
	p.Poll(context.Background())
	got := strings.Count(logs.String(), "cannot read chronyd")
	if got != 2 {
		t.Errorf("%d lines for one outage with two reasons, want 2:\n%s", got, logs.String())
	}
}

func TestReason(t *testing.T) {
	t.Parallel()
	tests := []struct {
		err  error
		want string
	}{
		{fmt.Errorf("at 127.0.0.1:323: %w", syscall.ECONNREFUSED), "connection refused"},
		{fmt.Errorf("at [::1]:323: %w", &net.OpError{Op: "read", Err: os.NewSyscallError("recvfrom", syscall.ECONNREFUSED)}), "connection refused"},
		{errors.Join(errors.New("socket: permission denied"), fmt.Errorf("x: %w", syscall.ECONNREFUSED)), "socket: permission denied; connection refused"},
		{fmt.Errorf("request: %w", os.ErrDeadlineExceeded), "timeout"},
		{errors.New("chronyd says: unauthorised"), "chronyd says: unauthorised"},
	}
	for _, tt := range tests {
		if got := reason(tt.err); got != tt.want {
			t.Errorf("reason(%v) = %q, want %q", tt.err, got, tt.want)
		}
	}
}

// TestPollerCadence: just after chronyd's next update, within the bounds;
// backing off while chronyd is away and while its update is late.
func TestPollerCadence(t *testing.T) {
	t.Parallel()
	cfg := DefaultConfig() // 1s to 8s
	p := newPoller(cfg, newClient(&replayDialer{dir: "testdata/unix-synced"}, time.Second, nil), nil)
	now := time.Now()
	set := func(up bool, ref time.Time, interval float64) {
		p.mu.Lock()
		p.snap.Up = up
		p.snap.Data.Tracking.RefTime, p.snap.Data.Tracking.UpdateInterval = ref, interval
		p.mu.Unlock()
	}
	set(true, now.Add(-time.Second), 4)
	if got := p.next(now); got != 3*time.Second+updateMargin {
		t.Errorf("next() with an update due in 3s = %v, want 3.25s", got)
	}
	set(true, now.Add(-time.Second), 64)
	if got := p.next(now); got != 8*time.Second {
		t.Errorf("next() with an update due in 63s = %v, want the longest, 8s", got)
	}
	set(true, now.Add(-time.Second), 1.1)
	if got := p.next(now); got != time.Second {
		t.Errorf("next() with an update due in 0.35s = %v, want the shortest, 1s", got)
	}
	set(true, now.Add(-10*time.Second), 4)
	var late []time.Duration
	for range 5 {
		late = append(late, p.next(now))
	}
	if want := []time.Duration{time.Second, 2 * time.Second, 4 * time.Second, 8 * time.Second, 8 * time.Second}; !slices.Equal(late, want) {
		t.Errorf("next() while the update is late = %v, want %v", late, want)
	}
	set(false, now, 4)
	var down []time.Duration
	for range 5 {
		p.failStreak++
		down = append(down, p.next(now))
	}
	if want := []time.Duration{time.Second, 2 * time.Second, 4 * time.Second, 8 * time.Second, 8 * time.Second}; !slices.Equal(down, want) {
		t.Errorf("next() while chronyd is away = %v, want %v", down, want)
	}
	// chronyd's exit watched: its updates are followed up to
	// watched_max_poll_interval (64 s) apart, not 8 s; away, the back-off
	// still stops at max_poll_interval.
	p.watching.Store(true)
	set(true, now.Add(-time.Second), 64)
	if got := p.next(now); got != 63*time.Second+updateMargin {
		t.Errorf("next() watched, with an update due in 63s = %v, want 63.25s", got)
	}
	set(true, now.Add(-time.Second), 1024)
	if got := p.next(now); got != 64*time.Second {
		t.Errorf("next() watched, with an update due in 1023s = %v, want the longest watched, 64s", got)
	}
	p.overdue = 0
	set(true, now.Add(-100*time.Second), 64)
	late = nil
	for range 8 {
		late = append(late, p.next(now))
	}
	if want := []time.Duration{time.Second, 2 * time.Second, 4 * time.Second, 8 * time.Second, 16 * time.Second, 32 * time.Second, 64 * time.Second, 64 * time.Second}; !slices.Equal(late, want) {
		t.Errorf("next() watched, while the update is late = %v, want %v", late, want)
	}
	set(false, now, 4)
	if got := p.next(now); got != 8*time.Second {
		t.Errorf("next() watched, chronyd away = %v, want max_poll_interval 8s", got)
	}
	p.watching.Store(false)
	p.cfg.MaxPollInterval = 0
	set(true, now.Add(-time.Second), 64)
	if got := p.next(now); got != time.Second {
		t.Errorf("next() with max_poll_interval 0 = %v, want poll_interval", got)
	}
}

// TestPollerWake: Wake polls at once, whatever the cadence says.
func TestPollerWake(t *testing.T) {
	t.Parallel()
	cfg := DefaultConfig()
	cfg.PollInterval, cfg.MaxPollInterval, cfg.ConfPath = time.Hour, time.Hour, ""
	p := newPoller(cfg, newClient(&replayDialer{dir: "testdata/unix-synced"}, time.Second, nil), nil)
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	polled := p.Polled().Listen()
	go p.Run(ctx)
	for deadline := time.Now().Add(10 * time.Second); p.Snapshot().Polls < 1; time.Sleep(time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatal("no first poll")
		}
	}
	select {
	case <-polled:
	case <-time.After(10 * time.Second):
		t.Fatal("Polled() did not fire after the first poll")
	}
	p.Wake()
	for deadline := time.Now().Add(10 * time.Second); p.Snapshot().Polls < 2; time.Sleep(time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatal("no poll 10s after Wake, at a 1h interval")
		}
	}
}

// On a host without chronyd (ntpd or timesyncd keeps its clock), "auto"
// finds no socket and nothing on UDP port 323: chronyd is absent, logged once
// at INFO, and neither a failure nor an ERROR. A chronyd that answered once
// and goes away, an address given in the configuration, or mode on, is a
// failure.
func TestPollerChronydNotRunning(t *testing.T) {
	t.Parallel()
	// A loopback UDP port nothing listens on: the kernel refuses it.
	pc, err := net.ListenPacket("udp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	closed := pc.LocalAddr().String()
	pc.Close()
	dir := t.TempDir()

	cfg := DefaultConfig()
	cfg.Timeout = time.Second
	d := newNetDialer(cfg)
	d.socketPaths = []string{dir + "/chronyd.sock"}
	d.udpAddrs = []string{closed}
	var logs bytes.Buffer
	p := newPoller(cfg, newClient(d, cfg.Timeout, nil), untimedLogger(&logs))
	for range 3 {
		p.Poll(context.Background())
	}
	if r := p.Snapshot().Reading(); !r.IsAbsent() || !strings.Contains(r.Err.Error(), "chronyd is not running") {
		t.Errorf("auto, nothing listening: reading %+v, want absent", r)
	}
	if got := logs.String(); strings.Contains(got, "ERROR") || strings.Count(got, "level=INFO msg=\"chronyd is not running here") != 1 {
		t.Errorf("auto, nothing listening: logs\n%s\nwant one INFO line and no ERROR", got)
	}

	given := cfg
	given.Address = closed
	logs.Reset()
	p = newPoller(given, newClient(newNetDialer(given), given.Timeout, nil), untimedLogger(&logs))
	p.Poll(context.Background())
	if r := p.Snapshot().Reading(); r.IsAbsent() || r.Err == nil {
		t.Errorf("chrony.address %s given, nothing listening: reading %+v, want a failure", closed, r)
	}
	if !strings.Contains(logs.String(), `level=ERROR msg="cannot read chronyd"`) {
		t.Errorf("chrony.address given: logs\n%s\nwant an ERROR", logs.String())
	}

	// mode: on at the auto address: expected, so nothing listening is a
	// failure too.
	on := cfg
	on.Mode = timesource.ModeOn
	p = newPoller(on, newClient(d, on.Timeout, nil), nil)
	p.Poll(context.Background())
	if r := p.Snapshot().Reading(); r.IsAbsent() || r.Err == nil {
		t.Errorf("chrony.mode on, auto, nothing listening: reading %+v, want a failure", r)
	}

	// Found once, then gone: lost, not absent.
	lost := newPoller(cfg, newClient(&replayDialer{dir: "testdata/unix-synced"}, time.Second, nil), nil)
	lost.Poll(context.Background())
	lost.client.Close()
	lost.client = newClient(d, cfg.Timeout, nil)
	lost.Poll(context.Background())
	if r := lost.Snapshot().Reading(); r.IsAbsent() || r.Err == nil {
		t.Errorf("chronyd answered, then nothing listens: reading %+v, want a failure", r)
	}
}
