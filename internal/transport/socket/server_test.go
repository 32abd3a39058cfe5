package socket_test

import (
	"context"
	"errors"
	"net"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/google/go-cmp/cmp/cmpopts"
	"github.com/prometheus/client_golang/prometheus"
	dto "github.com/prometheus/client_model/go"
	"golang.org/x/sys/unix"

	"github.com/clockwatch/clockwatch/internal/announce"
	"github.com/clockwatch/clockwatch/internal/policy"
	"github.com/clockwatch/clockwatch/internal/timesource"
	"github.com/clockwatch/clockwatch/internal/transport/socket"
	"github.com/clockwatch/clockwatch/stepdown"
)

func TestDrillReachesEveryClientOnceInOrder(t *testing.T) {
	t.Parallel()
	cfg := testConfig(t)
	s, _ := start(t, cfg, socket.Options{}, announce.Options{Epoch: 7})
	const n = 200
	conns := make([]*stepdown.Conn, n)
	var helloSeq uint64
	for i := range conns {
		var hello stepdown.Message
		conns[i], hello = dial(t, cfg.Socket)
		if hello.State != stepdown.StateOK || hello.Epoch != 7 || hello.Version != 1 || hello.HeartbeatSeconds != 0.02 {
			t.Fatalf("hello %+v", hello)
		}
		helloSeq = hello.Seq
	}
	// Client 0 (root: the test's own uid) asks for the drill over the socket.
	if err := conns[0].Send(stepdown.Message{Type: stepdown.TypeDrill, Reason: stepdown.ReasonStep,
		StepSeconds: stepdown.Float(-12.4), HoldSeconds: 0.05}); err != nil {
		t.Fatal(err)
	}
	want := []stepdown.Message{
		{Type: "stepdown", State: "stepdown", Reason: "step", Epoch: 7, Seq: helloSeq + 1, Drill: true,
			StepSeconds: stepdown.Float(-12.4), HoldSeconds: 0.05, Detail: "drill: nothing is wrong with the clock"},
		{Type: "resume", State: "ok", Reason: "drill", Epoch: 7, Seq: helloSeq + 2, Drill: true, Detail: "drill over"},
	}
	var wg sync.WaitGroup
	for i, c := range conns {
		wg.Go(func() {
			got := []stepdown.Message{next(t, c), next(t, c)}
			if diff := cmp.Diff(want, got, cmpopts.IgnoreFields(stepdown.Message{}, "MonoNanos")); diff != "" {
				t.Errorf("client %d (-want +got):\n%s", i, diff)
			}
			c.Ack(got[0].Seq)
			c.Ack(got[0].Seq) // repeated: counts once
		})
	}
	wg.Wait()
	waitFor(t, "acks", func() bool {
		return metricValue(t, s, socket.MetricAcks) == n
	})
	// Exactly once: nothing but heartbeats follows.
	for _, c := range conns[:3] {
		c.SetReadDeadline(time.Now().Add(100 * time.Millisecond))
		for {
			m, err := c.Read()
			if err != nil {
				break
			}
			if m.Type != stepdown.TypeHeartbeat || m.State != stepdown.StateOK || m.Seq != helloSeq+2 {
				t.Fatalf("unexpected %v", m)
			}
		}
	}
}

func TestTriggersReachClients(t *testing.T) {
	t.Parallel()
	cfg := testConfig(t)
	_, ann := start(t, cfg, socket.Options{}, announce.Options{Epoch: 1})
	c, _ := dial(t, cfg.Socket)
	wb := time.Date(2026, 11, 30, 5, 0, 0, 0, time.UTC)
	// Seen now (CLOCK_MONOTONIC): the hold-down's timer counts from it, so
	// the late subscriber below dials well within it.
	var ts unix.Timespec
	if err := unix.ClockGettime(unix.CLOCK_MONOTONIC, &ts); err != nil {
		t.Fatal(err)
	}
	mono := time.Duration(ts.Nano())
	ann.Step(policy.Step{Seconds: 0.5, Mono: mono, WallBefore: wb, WallAfter: wb.Add(500 * time.Millisecond), Epoch: 2, How: policy.SeenClockSet})
	m := next(t, c)
	want := stepdown.Message{Type: "stepdown", State: "stepdown", Reason: "step", Epoch: 2, Seq: m.Seq,
		StepSeconds: stepdown.Float(0.5), WallBefore: wb, WallAfter: wb.Add(500 * time.Millisecond), MonoNanos: int64(mono),
		Source: "clock_set", Detail: "wall clock stepped by 500ms"}
	if diff := cmp.Diff(want, m); diff != "" {
		t.Errorf("stepdown (-want +got):\n%s", diff)
	}
	// A late subscriber is told at once.
	_, hello := dial(t, cfg.Socket)
	if hello.State != stepdown.StateStepdown || hello.Reason != stepdown.ReasonStep || hello.Epoch != 2 || hello.Seq != m.Seq {
		t.Errorf("hello during stepdown: %+v", hello)
	}
	if r := next(t, c); r.Type != stepdown.TypeResume || r.Seq != m.Seq+1 || r.Reason != stepdown.ReasonStep {
		t.Errorf("after hold-down: %v", r)
	}
	ann.Reading(chronyReading(-2, 0.5, true))
	if m := next(t, c); m.Reason != stepdown.ReasonOffset || *m.OffsetSeconds != -2 {
		t.Errorf("offset: %v", m)
	}
	ann.Reading(chronyReading(0.001, 0.01, true))
	if m := next(t, c); m.Type != stepdown.TypeResume {
		t.Errorf("after offset: %v", m)
	}
}

func TestStuckClientDoesNotDelayOthers(t *testing.T) {
	t.Parallel()
	cfg := testConfig(t)
	cfg.QueueSize = 8
	cfg.Heartbeat = time.Hour // only events in the stream
	// Only stepdowns in the stream: with the test's 100 ms hold-down, an
	// iteration slower than that on a loaded machine put a resume between
	// two steps.
	cfg.HoldDown = time.Hour
	s, ann := start(t, cfg, socket.Options{})
	stuck, err := net.Dial("unix", cfg.Socket) // never reads
	if err != nil {
		t.Fatal(err)
	}
	defer stuck.Close()
	fast, _ := dial(t, cfg.Socket)
	waitFor(t, "two subscribers", func() bool { return metricValue(t, s, socket.MetricSubscribers) == 2 })
	// Events one at a time: the fast client reads each at once while the
	// stuck one's socket buffer, then its queue, fill up until it is cut off.
	var slowest time.Duration
	for i := 0; metricValue(t, s, socket.MetricDisconnects, "cause", socket.CauseLaggard) == 0; i++ {
		if i == 20000 {
			t.Fatal("stuck client never disconnected")
		}
		t0 := time.Now()
		ann.Step(policy.Step{Seconds: float64(i + 1)})
		if m := next(t, fast); m.Type != stepdown.TypeStepdown || *m.StepSeconds != float64(i+1) {
			t.Fatalf("event %d: got %v", i, m)
		}
		slowest = max(slowest, time.Since(t0))
	}
	if slowest > time.Second {
		t.Errorf("slowest event took %s to reach the fast client", slowest)
	}
	t.Logf("slowest event to the fast client: %s", slowest)
}

// TestLaggardPinsLittleKernelMemory: what a client that never reads has not
// received waits in its queue, not in the kernel, whose socket buffers are
// charged to the daemon's memory cgroup. At the default send buffer a
// laggard held 14.5 KB of heartbeats (about 208 KiB of buffers) before it was
// cut off; 4,000 subscribers a dozen heartbeats behind held 45–55 MB in the
// systemd VM test and the daemon met its memory.max.
func TestLaggardPinsLittleKernelMemory(t *testing.T) {
	t.Parallel()
	cfg := testConfig(t)
	cfg.Heartbeat = 10 * time.Millisecond
	s, _ := start(t, cfg, socket.Options{})
	stuck, err := net.Dial("unix", cfg.Socket) // never reads
	if err != nil {
		t.Fatal(err)
	}
	defer stuck.Close()
	// Heartbeats fill its socket, then its queue, until it is cut off.
	waitFor(t, "the laggard cut off", func() bool {
		return metricValue(t, s, socket.MetricDisconnects, "cause", socket.CauseLaggard) == 1
	})
	raw, err := stuck.(*net.UnixConn).SyscallConn()
	if err != nil {
		t.Fatal(err)
	}
	var pending int
	var ioctlErr error
	raw.Control(func(fd uintptr) { pending, ioctlErr = unix.IoctlGetInt(int(fd), unix.SIOCINQ) })
	if ioctlErr != nil {
		t.Fatal(ioctlErr)
	}
	// The hello and a handful of heartbeats (about 100 bytes each).
	if pending > 4096 {
		t.Errorf("the kernel held %d bytes of messages for a client that never read, want at most 4096 (its queue holds the rest)", pending)
	}
	t.Logf("held in the kernel for the laggard: %d bytes", pending)
}

func TestBadInputClosesOnlyThatConnection(t *testing.T) {
	t.Parallel()
	cfg := testConfig(t)
	_, ann := start(t, cfg, socket.Options{})
	bystander, _ := dial(t, cfg.Socket)
	for _, tc := range []struct {
		name   string
		send   string
		want   []stepdown.Message
		closed bool
	}{
		{name: "garbage", send: "hello there\n", want: []stepdown.Message{{Type: "error", Code: "garbage"}}, closed: true},
		{name: "no type", send: `{"seq":1}` + "\n", want: []stepdown.Message{{Type: "error", Code: "garbage"}}, closed: true},
		{name: "over-long line", send: strings.Repeat("x", 5000), want: []stepdown.Message{{Type: "error", Code: "line_too_long"}}, closed: true},
		{name: "flood", send: strings.Repeat("\n", 500), want: []stepdown.Message{{Type: "error", Code: "flood"}}, closed: true},
		{name: "unknown type", send: `{"type":"hello"}` + "\n", want: []stepdown.Message{{Type: "error", Code: "unknown_type"}}},
		{name: "ack of an unsent seq", send: `{"type":"ack","seq":99999}` + "\n", want: []stepdown.Message{{Type: "error", Code: "bad_request"}}},
		{name: "drill with a bad reason", send: `{"type":"drill","reason":"nope"}` + "\n", want: []stepdown.Message{{Type: "error", Code: "bad_request"}}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			raw, err := net.Dial("unix", cfg.Socket)
			if err != nil {
				t.Fatal(err)
			}
			defer raw.Close()
			c := stepdown.NewConn(raw)
			if m := next(t, c); m.Type != stepdown.TypeHello {
				t.Fatalf("got %v", m)
			}
			if err := c.Send(stepdown.Message{Type: stepdown.TypeHeartbeat}); err != nil { // warm-up: unknown type
				t.Fatal(err)
			}
			if m := next(t, c); m.Code != stepdown.CodeUnknownType {
				t.Fatalf("got %v", m)
			}
			if _, err := raw.Write([]byte(tc.send)); err != nil {
				t.Fatal(err)
			}
			if tc.closed {
				if diff := cmp.Diff(tc.want, untilClosed(t, c)); diff != "" {
					t.Errorf("(-want +got):\n%s", diff)
				}
				return
			}
			m := next(t, c)
			if diff := cmp.Diff(tc.want, []stepdown.Message{{Type: m.Type, Code: m.Code}}); diff != "" {
				t.Errorf("(-want +got):\n%s", diff)
			}
		})
	}
	// The bystander still gets heartbeats and events.
	ann.Step(policy.Step{Seconds: 1})
	if m := next(t, bystander); m.Type != stepdown.TypeStepdown {
		t.Fatalf("bystander got %v", m)
	}
}

func TestPeerCredentials(t *testing.T) {
	t.Parallel()
	cred := socket.Cred{PID: 42, UID: 1000, GID: 1000}
	opts := socket.Options{PeerCred: func(int) (socket.Cred, error) { return cred, nil }, SelfUID: 999}
	t.Run("not in the allow-list", func(t *testing.T) {
		t.Parallel()
		cfg := testConfig(t)
		cfg.AllowUIDs = []uint32{5}
		s, _ := start(t, cfg, opts)
		c, err := stepdown.Dial(context.Background(), cfg.Socket)
		if err != nil {
			t.Fatal(err)
		}
		defer c.Close()
		if diff := cmp.Diff([]stepdown.Message{{Type: "error", Code: "forbidden"}}, untilClosed(t, c)); diff != "" {
			t.Errorf("(-want +got):\n%s", diff)
		}
		waitFor(t, "not_allowed", func() bool {
			return metricValue(t, s, socket.MetricDisconnects, "cause", socket.CauseNotAllowed) == 1
		})
	})
	t.Run("allowed by gid, may not drill", func(t *testing.T) {
		t.Parallel()
		cfg := testConfig(t)
		cfg.AllowGIDs = []uint32{1000}
		start(t, cfg, opts)
		c, hello := dial(t, cfg.Socket)
		if hello.State != stepdown.StateOK {
			t.Fatalf("hello %v", hello)
		}
		c.Send(stepdown.Message{Type: stepdown.TypeDrill})
		if m := next(t, c); m.Code != stepdown.CodeForbidden {
			t.Fatalf("drill by uid 1000: %v", m)
		}
	})
	t.Run("drill_uids may drill", func(t *testing.T) {
		t.Parallel()
		cfg := testConfig(t)
		cfg.DrillUIDs = []uint32{1000}
		start(t, cfg, opts)
		c, _ := dial(t, cfg.Socket)
		c.Send(stepdown.Message{Type: stepdown.TypeDrill, HoldSeconds: 10})
		if m := next(t, c); m.Type != stepdown.TypeStepdown || !m.Drill || m.Reason != stepdown.ReasonDrill {
			t.Fatalf("drill: %v", m)
		}
		c.Send(stepdown.Message{Type: stepdown.TypeDrill})
		if m := next(t, c); m.Code != stepdown.CodeBusy {
			t.Fatalf("second drill: %v", m)
		}
	})
}

func TestMaxClients(t *testing.T) {
	t.Parallel()
	cfg := testConfig(t)
	cfg.MaxClients = 2
	start(t, cfg, socket.Options{})
	dial(t, cfg.Socket)
	dial(t, cfg.Socket)
	c, err := stepdown.Dial(context.Background(), cfg.Socket)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	if diff := cmp.Diff([]stepdown.Message{{Type: "error", Code: "busy"}}, untilClosed(t, c)); diff != "" {
		t.Errorf("(-want +got):\n%s", diff)
	}
}

// gather returns the server's metric families by name.
func gather(t testing.TB, s *socket.Server) map[string]*dto.MetricFamily {
	t.Helper()
	reg := prometheus.NewPedanticRegistry()
	reg.MustRegister(s.Collector())
	mfs, err := reg.Gather()
	if err != nil {
		t.Fatal(err)
	}
	byName := map[string]*dto.MetricFamily{}
	for _, mf := range mfs {
		byName[mf.GetName()] = mf
	}
	return byName
}

// metricValue returns the value of one counter or gauge series of the
// server's collector, by name and label pairs.
func metricValue(t testing.TB, s *socket.Server, name string, labels ...string) float64 {
	t.Helper()
	if mf := gather(t, s)[name]; mf != nil {
	series:
		for _, m := range mf.GetMetric() {
			for i := 0; i+1 < len(labels); i += 2 {
				found := false
				for _, lp := range m.GetLabel() {
					if lp.GetName() == labels[i] && lp.GetValue() == labels[i+1] {
						found = true
					}
				}
				if !found {
					continue series
				}
			}
			switch {
			case m.GetCounter() != nil:
				return m.GetCounter().GetValue()
			case m.GetGauge() != nil:
				return m.GetGauge().GetValue()
			}
		}
	}
	return 0
}

// chronyReading is a reading from an answering chronyd.
func chronyReading(offset, bound float64, synced bool) timesource.Reading {
	return timesource.Reading{Source: "chrony", Found: true, Up: true, HasData: true, Synchronized: synced,
		Offset: time.Duration(offset * float64(time.Second)), ErrorBound: time.Duration(bound * float64(time.Second))}
}

func TestChronyReadings(t *testing.T) {
	t.Parallel()
	cfg := testConfig(t)
	cfg.Triggers.ProbeLost.Grace = 30 * time.Millisecond
	_, ann := start(t, cfg, socket.Options{})
	c, _ := dial(t, cfg.Socket)
	// Never answered: absent, not lost.
	ann.Reading(timesource.Reading{Source: "chrony", Err: errors.New("no chronyd")})
	good := chronyReading(0.001, 0.01, true)
	ann.Reading(good)
	bad := chronyReading(1.5, 1.51, true)
	ann.Reading(bad)
	if m := next(t, c); m.Reason != stepdown.ReasonOffset || *m.OffsetSeconds != 1.5 || m.Source != "chrony" {
		t.Fatalf("offset: %v", m)
	}
	if m := next(t, c); m.Reason != stepdown.ReasonErrorBound || m.Source != "chrony" {
		t.Fatalf("error bound: %v", m)
	}
	ann.Reading(good)
	if m := next(t, c); m.Type != stepdown.TypeResume {
		t.Fatalf("after the offset: %v", m)
	}
	// A chronyd that worked and stopped answering is a lost probe.
	lost := timesource.Reading{Source: "chrony", Found: true, Err: errors.New("gone")}
	ann.Reading(lost)
	waitFor(t, "probe_lost", func() bool {
		ann.Reading(lost)
		return ann.Latest().Status.Reason == stepdown.ReasonProbeLost
	})
	if m := next(t, c); m.Reason != stepdown.ReasonProbeLost || m.Source != "chrony" {
		t.Fatalf("lost: %v", m)
	}
}

func TestReload(t *testing.T) {
	t.Parallel()
	cfg := testConfig(t)
	s, ann := start(t, cfg, socket.Options{})
	ann.Reading(chronyReading(2, 0.1, true))
	if st := ann.Latest().Status; st.State != stepdown.StateStepdown {
		t.Fatalf("state %v", st)
	}
	next := cfg
	next.Triggers.Offset.Enabled = false
	next.HoldDown = time.Millisecond
	if restart, err := s.Reload(next.Config); err != nil || restart {
		t.Fatalf("Reload: %v, %v", restart, err)
	}
	ann.SetConfig(next.policyConfig) // the daemon's half of a reload
	// The offset no longer counts: the hold-down ends and the state resumes.
	waitFor(t, "resume", func() bool { return ann.Latest().Status.State == stepdown.StateOK })
	// The hello tells the announcer's hold-down, reloaded.
	if _, hello := dial(t, cfg.Socket); hello.HoldDownSeconds != next.HoldDown.Seconds() {
		t.Errorf("hello after the reload says hold_down_seconds %v, want %v", hello.HoldDownSeconds, next.HoldDown.Seconds())
	}
	next.Socket += ".new"
	if restart, err := s.Reload(next.Config); err != nil || !restart {
		t.Fatalf("Reload with a new socket: %v, %v", restart, err)
	}
	next.QueueSize = 0
	if _, err := s.Reload(next.Config); err == nil {
		t.Fatal("invalid configuration accepted")
	}
}

func TestListenBeforeRun(t *testing.T) {
	t.Parallel()
	cfg := testConfig(t)
	other, err := net.Listen("unix", cfg.Socket) // someone else serves the path
	if err != nil {
		t.Fatal(err)
	}
	defer other.Close()
	s, _ := newServer(t, cfg, socket.Options{})
	if err := s.Listen(); err == nil || !strings.Contains(err.Error(), "is live") {
		t.Fatalf("Listen: %v", err)
	}
	if err := s.Run(context.Background()); err == nil {
		t.Fatal("Run without a socket succeeded")
	}
}

func TestKernelReadings(t *testing.T) {
	t.Parallel()
	cfg := testConfig(t)
	_, ann := start(t, cfg, socket.Options{})
	c, _ := dial(t, cfg.Socket)
	kernel := func(maxErr time.Duration) timesource.Reading {
		return timesource.Reading{Source: "kernel", Role: timesource.Fallback, Found: true, Up: true, HasData: true,
			Synchronized: maxErr < 16*time.Second, ErrorBound: maxErr}
	}
	ann.Reading(kernel(10 * time.Millisecond))
	ann.Reading(kernel(16 * time.Second)) // maxerror saturated
	if m := next(t, c); m.Reason != stepdown.ReasonErrorBound || m.Source != "kernel" || *m.ErrorBoundSeconds != 16 {
		t.Fatalf("error bound: %v", m)
	}
}

// The hello says since when the state holds, how many clients are connected
// (this one included) and, during a stepdown, the source and detail of the
// announcement that caused it: what `clockwatch status` shows a user.
func TestHelloSaysSinceAndSubscribers(t *testing.T) {
	t.Parallel()
	cfg := testConfig(t)
	cfg.HoldDown = time.Hour
	before := time.Now().Truncate(time.Millisecond)
	_, ann := start(t, cfg, socket.Options{}, announce.Options{Epoch: 1})
	_, first := dial(t, cfg.Socket)
	if first.Subscribers != 1 || first.Since.Before(before.Add(-time.Second)) || first.Since.After(time.Now()) {
		t.Errorf("first hello: subscribers %d, since %v; want 1 and since the start (%v)", first.Subscribers, first.Since, before)
	}
	ann.Reading(chronyReading(-2, 0.5, true))
	stepped := time.Now()
	_, second := dial(t, cfg.Socket)
	if second.State != stepdown.StateStepdown || second.Reason != stepdown.ReasonOffset || second.Source != "chrony" ||
		!strings.Contains(second.Detail, "offset") || second.Subscribers != 2 {
		t.Errorf("hello during the stepdown: %+v; want reason offset, source chrony, its detail, 2 subscribers", second)
	}
	if d := second.Since.Sub(stepped); d > 50*time.Millisecond || d < -time.Second {
		t.Errorf("hello during the stepdown: since %v, want when it stepped down (%v)", second.Since, stepped)
	}
	// A second stepdown while in stepdown does not move since. Each hello
	// says since as now minus how long the state has held (monotonic: right
	// across a step of the wall clock), to the millisecond: two hellos may
	// differ by a millisecond or so, a since that restarted by 200 ms.
	time.Sleep(200 * time.Millisecond)
	ann.Reading(chronyReading(0.001, 3, true))
	time.Sleep(20 * time.Millisecond)
	_, third := dial(t, cfg.Socket)
	if d := third.Since.Sub(second.Since); d > 50*time.Millisecond || d < -50*time.Millisecond || third.Subscribers != 3 {
		t.Errorf("hello after a second trigger: since %v, subscribers %d; want %v (within 50 ms) and 3", third.Since, third.Subscribers, second.Since)
	}
}
