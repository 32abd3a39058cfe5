package ptp

import (
	"context"
	"errors"
	"log/slog"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/clockwatch/clockwatch/internal/loop"
	"github.com/clockwatch/clockwatch/internal/timesource"
	"github.com/facebook/time/ptp/protocol"
	"github.com/google/go-cmp/cmp"
	"go.yaml.in/yaml/v3"
)

var at = time.Date(2026, 12, 1, 12, 0, 0, 0, time.UTC)

func slave(state protocol.PortState) Data {
	return Data{ClockIdentity: "bbbbbb.fffe.000002", ClockClass: 255, ClockAccuracy: 0xfe, SlaveOnly: true,
		Ports:        []Port{{Number: 1, Interface: "eth0", State: state, Timestamping: "HARDWARE"}},
		StepsRemoved: 1, OffsetFromMaster: -150 * time.Nanosecond, MeanPathDelay: 2 * time.Microsecond,
		ParentPort: "aaaaaa.fffe.000001-1", GrandmasterIdentity: "aaaaaa.fffe.000001", GrandmasterClockClass: 6,
		GrandmasterClockAccuracy: 0x21, GrandmasterPresent: true, MasterOffset: -150 * time.Nanosecond,
		Time: TimeProperties{CurrentUTCOffset: 37, UTCOffsetValid: true, PTPTimescale: true, TimeTraceable: true, TimeSource: 0x20}}
}

func grandmaster(class uint8, traceable bool) Data {
	return Data{ClockIdentity: "aaaaaa.fffe.000001", ClockClass: class, ClockAccuracy: 0x21,
		Ports:      []Port{{Number: 1, Interface: "eth0", State: protocol.PortStateMaster, Timestamping: "SOFTWARE"}},
		ParentPort: "aaaaaa.fffe.000001-0", GrandmasterIdentity: "aaaaaa.fffe.000001", GrandmasterClockClass: class,
		GrandmasterClockAccuracy: 0x21, Time: TimeProperties{CurrentUTCOffset: 37, TimeTraceable: traceable}}
}

func TestReading(t *testing.T) {
	t.Parallel()
	snap := func(d Data) Snapshot {
		return Snapshot{Found: true, Tally: loop.Tally{Up: true, LastSuccess: at}, HaveData: true, Data: d}
	}
	base := timesource.Reading{Source: "ptp4l", Found: true, Up: true, LastSuccess: at}
	with := func(f func(*timesource.Reading)) timesource.Reading { r := base; f(&r); return r }
	leap := slave(protocol.PortStateSlave)
	leap.Time.Leap61 = true
	leapUncal := leap
	leapUncal.Ports = []Port{{Number: 1, State: protocol.PortStateUncalibrated, Timestamping: "HARDWARE"}}
	bc := slave(protocol.PortStateMaster) // a boundary clock: one MASTER port, one SLAVE
	bc.Ports = append(bc.Ports, Port{Number: 2, Interface: "eth1", State: protocol.PortStateSlave, Timestamping: "SOFTWARE"})
	unknownGM := slave(protocol.PortStateSlave)
	unknownGM.GrandmasterClockAccuracy = 0xfe
	lost := slave(protocol.PortStateListening)
	down := snap(slave(protocol.PortStateSlave))
	down.Up, down.Err = false, errors.New("ptp4l did not answer")
	for _, tc := range []struct {
		name string
		snap Snapshot
		want timesource.Reading
	}{
		{"never found", Snapshot{}, timesource.Reading{Source: "ptp4l", Leap: timesource.LeapUnsynchronized}},
		{"pinned, never answered", Snapshot{Found: true, Tally: loop.Tally{Err: errors.New("no socket")}},
			timesource.Reading{Source: "ptp4l", Found: true, Err: errors.New("no socket"), Leap: timesource.LeapUnsynchronized}},
		{"slave", snap(slave(protocol.PortStateSlave)), with(func(r *timesource.Reading) {
			r.HasData, r.Synchronized, r.Offset = true, true, -150*time.Nanosecond
			r.ErrorBound = 150*time.Nanosecond + 2*time.Microsecond + 100*time.Nanosecond
		})},
		{"uncalibrated: data, not synchronised", snap(slave(protocol.PortStateUncalibrated)), with(func(r *timesource.Reading) {
			r.HasData, r.Offset, r.Leap = true, -150*time.Nanosecond, timesource.LeapUnsynchronized
			r.ErrorBound = 2250 * time.Nanosecond
		})},
		{"leap61 announced", snap(leap), with(func(r *timesource.Reading) {
			r.HasData, r.Synchronized, r.Offset, r.Leap = true, true, -150*time.Nanosecond, timesource.LeapInsert
			r.ErrorBound = 2250 * time.Nanosecond
		})},
		{"leap61 while not synchronised", snap(leapUncal), with(func(r *timesource.Reading) {
			r.HasData, r.Offset, r.Leap = true, -150*time.Nanosecond, timesource.LeapUnsynchronized
			r.ErrorBound = 2250 * time.Nanosecond
		})},
		{"boundary clock: the SLAVE port counts", snap(bc), with(func(r *timesource.Reading) {
			r.HasData, r.Synchronized, r.Offset = true, true, -150*time.Nanosecond
			r.ErrorBound = 2250 * time.Nanosecond
		})},
		{"unknown grandmaster accuracy adds nothing", snap(unknownGM), with(func(r *timesource.Reading) {
			r.HasData, r.Synchronized, r.Offset = true, true, -150*time.Nanosecond
			r.ErrorBound = 2150 * time.Nanosecond
		})},
		{"lost: LISTENING keeps the old parent data set", snap(lost), with(func(r *timesource.Reading) { r.Leap = timesource.LeapUnsynchronized })},
		{"down: the last data, not up", down, with(func(r *timesource.Reading) {
			r.Up, r.Err = false, down.Err
			r.HasData, r.Synchronized, r.Offset = true, true, -150*time.Nanosecond
			r.ErrorBound = 2250 * time.Nanosecond
		})},
		{"grandmaster class 6", snap(grandmaster(6, false)), with(func(r *timesource.Reading) {
			r.HasData, r.Synchronized, r.ErrorBound = true, true, 100*time.Nanosecond
		})},
		{"grandmaster class 248, time traceable", snap(grandmaster(248, true)), with(func(r *timesource.Reading) {
			r.HasData, r.Synchronized, r.ErrorBound = true, true, 100*time.Nanosecond
		})},
		{"grandmaster free-running (class 248)", snap(grandmaster(248, false)), with(func(r *timesource.Reading) {
			r.HasData, r.ErrorBound, r.Leap = true, 100*time.Nanosecond, timesource.LeapUnsynchronized
		})},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			got := tc.snap.Reading()
			got.Detail = ""
			if diff := cmp.Diff(tc.want, got, cmp.Comparer(func(a, b error) bool { return (a == nil) == (b == nil) })); diff != "" {
				t.Errorf("Reading() (-want +got):\n%s", diff)
			}
		})
	}
}

func TestDetail(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		d    Data
		want string
	}{
		{slave(protocol.PortStateSlave), "port SLAVE, grandmaster aaaaaa.fffe.000001 class 6, 1 step, hardware timestamps: the offset is the PHC's (phc2sys not visible)"},
		{grandmaster(6, false), "port MASTER, grandmaster itself class 6, software timestamps"},
	} {
		if got := detail(tc.d); got != tc.want {
			t.Errorf("detail() = %q, want %q", got, tc.want)
		}
	}
}

// fakeStat says whether the socket exists.
type fakeStat struct{ exists bool }

func (f *fakeStat) stat(string) (os.FileInfo, error) {
	if f.exists {
		return nil, nil
	}
	return nil, os.ErrNotExist
}

func TestPollerAuto(t *testing.T) {
	t.Parallel()
	var logs strings.Builder
	p := NewPoller(DefaultConfig(), slog.New(slog.NewTextHandler(&logs, nil)))
	fs := &fakeStat{}
	p.stat = fs.stat
	rc := &replayConn{}
	p.client.dial = replayDialer{rc}
	p.Poll(context.Background())
	if s := p.Snapshot(); s.Found || s.Polls != 0 || !errors.Is(s.Err, os.ErrNotExist) || rc.writes != 0 || s.Address != "/var/run/ptp4l" {
		t.Errorf("without a socket: %+v, %d requests: want absent (looked: the error says so), nothing sent, nothing counted", s, rc.writes)
	}
	// Not found, not up, with the error: absent, and distinct from a source
	// not polled yet (no error).
	if r := p.Reading(); r.Found || r.Up || r.Err == nil {
		t.Errorf("absent reading %+v: want not found, not up, the error", r)
	}
	if d := p.nextPoll(); d != loop.AbsentRecheck {
		t.Errorf("next poll while absent in %s, want %s: an absent ptp4l is looked for rarely", d, loop.AbsentRecheck)
	}

	// ptp4l appears, follows A, loses it, follows A again, then B.
	fs.exists = true
	seq := []Data{slave(protocol.PortStateUncalibrated), slave(protocol.PortStateSlave), slave(protocol.PortStateListening), slave(protocol.PortStateSlave)}
	b := slave(protocol.PortStateSlave)
	b.GrandmasterIdentity = "cccccc.fffe.000003"
	seq = append(seq, b)
	for i, d := range seq {
		p.snap.Update(func(s *Snapshot) { p.observe(s, d, at.Add(time.Duration(i)*time.Second)) })
	}
	s := p.Snapshot()
	if !s.Found || s.State != protocol.PortStateSlave || !s.StateSince.Equal(at.Add(3*time.Second)) ||
		s.GrandmasterChanges != 1 || s.Grandmaster != "cccccc.fffe.000003" || s.PreviousGrandmaster != "aaaaaa.fffe.000001" ||
		!s.GrandmasterChangedAt.Equal(at.Add(4*time.Second)) {
		t.Errorf("after A, lost, A, B: %+v: want SLAVE since 3s, one grandmaster change A→B at 4s", s)
	}
	if d := p.nextPoll(); d != p.cfg.PollInterval {
		t.Errorf("next poll once found in %s, want the poll interval %s", d, p.cfg.PollInterval)
	}
	if n := strings.Count(logs.String(), "PTP grandmaster changed"); n != 1 {
		t.Errorf("logged %d grandmaster changes, want 1:\n%s", n, logs.String())
	}

	// Found once, a vanished socket is ptp4l lost, not absent.
	fs.exists = false
	p.client.dial = replayDialer{}
	p.Poll(context.Background())
	if s := p.Snapshot(); !s.Found || s.Up || s.Err == nil || s.Polls != 1 || s.Failures != 1 {
		t.Errorf("after the socket vanished: %+v: want found, down with the error", s)
	}
	p.Poll(context.Background())
	if n := strings.Count(logs.String(), "cannot read ptp4l"); n != 1 {
		t.Errorf("a lasting failure logged %d times, want once:\n%s", n, logs.String())
	}
}

// TestPollerRun: Run polls at once and on its interval, and returns nil
// when cancelled, with the connection closed.
func TestPollerRun(t *testing.T) {
	t.Parallel()
	b, err := os.ReadFile(filepath.Join("testdata", "ptp4l-3.1-slave-uncalibrated.replies"))
	if err != nil {
		t.Fatal(err)
	}
	replies := decodeReplies(t, b)
	cfg := DefaultConfig()
	cfg.Address, cfg.PollInterval, cfg.Timeout = "/run/ptp4l-test", 10*time.Millisecond, 10*time.Millisecond
	p := NewPoller(cfg, nil)
	rc := &replayConn{}
	for range 3 {
		rc.replies = append(rc.replies, replies...)
	}
	p.client.dial = replayDialer{rc}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error)
	go func() { done <- p.Run(ctx) }()
	for deadline := time.Now().Add(5 * time.Second); p.Snapshot().Polls < 3; {
		if time.Now().After(deadline) {
			t.Fatalf("3 polls did not happen: %+v", p.Snapshot())
		}
		time.Sleep(time.Millisecond)
	}
	cancel()
	if err := <-done; err != nil {
		t.Errorf("Run() = %v, want nil on cancellation", err)
	}
	if s := p.Snapshot(); !s.HaveData || s.Failures > s.Polls-3 || !rc.closed {
		t.Errorf("after Run: %+v, closed %v: want data from three good polls, the connection closed", s, rc.closed)
	}
}

func TestStatusLines(t *testing.T) {
	t.Parallel()
	s := Snapshot{Address: DefaultSocket, Found: true, Tally: loop.Tally{Up: true, Polls: 100, LastSuccess: at}, HaveData: true, Data: slave(protocol.PortStateSlave),
		State: protocol.PortStateSlave, StateSince: at.Add(-90 * time.Second), Grandmaster: "aaaaaa.fffe.000001",
		GrandmasterChanges: 1, GrandmasterChangedAt: at.Add(-time.Hour), PreviousGrandmaster: "cccccc.fffe.000003"}
	gm := Snapshot{Address: DefaultSocket, Found: true, HaveData: true, Data: grandmaster(6, true), Tally: loop.Tally{LastSuccess: at.Add(-5 * time.Second), Err: errors.New("ptp4l did not answer")},
		State: protocol.PortStateMaster, StateSince: at.Add(-time.Minute)}
	var got []string
	for _, x := range []Snapshot{{}, {Address: DefaultSocket, Found: true, Tally: loop.Tally{Err: errors.New("no socket")}}, s, gm} {
		for _, l := range Lines(x, at) {
			got = append(got, l.String())
		}
		got = append(got, "--")
	}
	golden := filepath.Join("testdata", "status.golden")
	text := strings.Join(got, "\n") + "\n"
	if *update {
		if err := os.WriteFile(golden, []byte(text), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	want, err := os.ReadFile(golden)
	if err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff(string(want), text); diff != "" {
		t.Errorf("status lines differ from %s (-want +got):\n%s", golden, diff)
	}
}

// TestStatusOnce: with "auto" and no ptp4l, `clockwatch status` says
// nothing of it; pinned to a socket that is not there, it says why.
func TestStatusOnce(t *testing.T) {
	t.Parallel()
	if DefaultConfig().SocketPath() != DefaultSocket {
		t.Fatal("the default is not auto")
	}
	if _, err := os.Stat(DefaultSocket); err == nil {
		t.Skip("a ptp4l runs here")
	}
	host := timesource.Host{Now: at}
	if st, ok := StatusOnce(context.Background(), DefaultConfig(), host); ok || st.Lines != nil || !st.Reading.IsAbsent() {
		t.Errorf("StatusOnce() without ptp4l = %v %q %+v, want nothing, absent", ok, st.Lines, st.Reading)
	}
	c := DefaultConfig()
	c.Address = filepath.Join(t.TempDir(), "ptp4l")
	st, ok := StatusOnce(context.Background(), c, host)
	if r, got := st.Reading, st.Lines; !ok || len(got) != 1 || !strings.Contains(got[0].Value, "does not exist: ptp4l is not running") || r.Up || r.Err == nil || r.IsAbsent() {
		t.Errorf("StatusOnce() pinned to a missing socket = %v %q %+v", ok, got, r)
	}
	if st, ok := StatusOnce(context.Background(), Config{}, host); ok || st.Lines != nil {
		t.Errorf("StatusOnce() with ptp off = %q, want nothing", st.Lines)
	}
}

func TestConfigValidate(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name, yaml, wantErr string
	}{
		{name: "defaults"},
		{name: "pinned", yaml: "address: /run/ptp4l-eth0\ndomain: 24\nreply_socket_dir: /run/clockwatch"},
		{name: "off", yaml: "enabled: false"},
		{name: "relative path", yaml: "address: ptp4l", wantErr: `ptp.address: must be "auto" or the absolute path of ptp4l's socket (uds_address), got "ptp4l"`},
		{name: "domain", yaml: "domain: 256", wantErr: "ptp.domain: must be a PTP domain number, 0-255, got 256"},
		{name: "reply dir", yaml: "reply_socket_dir: run", wantErr: `ptp.reply_socket_dir: must be an absolute path, got "run"`},
		{name: "durations", yaml: "poll_interval: 0s\ntimeout: -1s", wantErr: "ptp.poll_interval: must be between 100ms and 1h (each poll is a round of management requests), got 0s\nptp.timeout: must be at least 1ms, got -1s"},
		{name: "timeout above interval", yaml: "poll_interval: 1s\ntimeout: 2s", wantErr: "ptp.timeout: must not exceed ptp.poll_interval (1s), got 2s"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			c := DefaultConfig()
			if err := yaml.Unmarshal([]byte(tc.yaml), &c); err != nil {
				t.Fatal(err)
			}
			got := ""
			if err := c.Validate(); err != nil {
				got = err.Error()
			}
			if got != tc.wantErr {
				t.Errorf("Validate() = %q, want %q", got, tc.wantErr)
			}
		})
	}
	if c := DefaultConfig(); !c.On() || c.Mode != timesource.ModeAuto || c.Address != AddressAuto || c.SocketPath() != "/var/run/ptp4l" || c.PollInterval != time.Second {
		t.Errorf("DefaultConfig() = %+v, want on, mode auto, auto (/var/run/ptp4l), 1s polls", c)
	}
}
