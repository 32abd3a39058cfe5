package socket_test

import (
	"errors"
	"testing"
	"time"

	"github.com/clockwatch/clockwatch/internal/announce"
	"github.com/clockwatch/clockwatch/internal/transport/socket"
	"github.com/clockwatch/clockwatch/stepdown"
)

// onTime is how late a deadline may be announced: the timer's latency on a
// loaded machine under -race. The heartbeat is an hour in these tests, so
// only the announcer's deadline timer can make them pass.
const onTime = 400 * time.Millisecond

// deadlineConfig has a grace and a hold-down far shorter than the
// heartbeat.
func deadlineConfig(t *testing.T) testCfg {
	cfg := testConfig(t)
	cfg.Heartbeat = time.Hour
	cfg.HoldDown = 150 * time.Millisecond
	cfg.Triggers.ProbeLost.Grace = 100 * time.Millisecond
	return cfg
}

// within fails unless the event came at least want and at most want+onTime
// after from.
func within(t *testing.T, what string, from time.Time, want time.Duration) {
	t.Helper()
	if d := time.Since(from); d < want || d > want+onTime {
		t.Errorf("%s %s after its cause, want %s (+%s at most)", what, d, want, onTime)
	} else {
		t.Logf("%s %s after its cause (%s late)", what, d, d-want)
	}
}

// TestDeadlinesWithoutSubscriber: with nobody connected the heartbeat does
// not tick, yet a grace period and a hold-down end on time.
func TestDeadlinesWithoutSubscriber(t *testing.T) {
	t.Parallel()
	cfg := deadlineConfig(t)
	s, ann := start(t, cfg, socket.Options{})
	sub := ann.Subscribe("test", announce.Buffered(8))
	defer sub.Close()
	waitEvent := func(typ string, reason stepdown.Reason) {
		t.Helper()
		select {
		case a := <-sub.C():
			e := a.Event
			if e.Type != typ || e.Reason != reason {
				t.Fatalf("event %s/%s, want %s/%s", e.Type, e.Reason, typ, reason)
			}
		case <-time.After(10 * time.Second):
			t.Fatalf("no %s/%s within 10 s", typ, reason)
		}
	}
	t0 := time.Now()
	ann.ProbeFailed("x", errors.New("gone"))
	waitEvent(stepdown.TypeStepdown, stepdown.ReasonProbeLost)
	within(t, "probe_lost stepdown", t0, cfg.Triggers.ProbeLost.Grace)
	t1 := time.Now()
	ann.ProbeOK("x")
	waitEvent(stepdown.TypeResume, stepdown.ReasonProbeLost)
	within(t, "resume", t1, cfg.HoldDown)
	if n := s.Subscribers(); n != 0 {
		t.Fatalf("%d subscribers", n)
	}
	if hb := metricValue(t, s, socket.MetricMessagesSent, "type", stepdown.TypeHeartbeat); hb != 0 {
		t.Errorf("%v heartbeats sent with no subscriber", hb)
	}
}

// TestDeadlinesWithSubscriber: the same, seen by a subscriber on the socket.
func TestDeadlinesWithSubscriber(t *testing.T) {
	t.Parallel()
	cfg := deadlineConfig(t)
	_, ann := start(t, cfg, socket.Options{})
	c, _ := dial(t, cfg.Socket)
	t0 := time.Now()
	ann.ProbeFailed("x", errors.New("gone"))
	if m := next(t, c); m.Type != stepdown.TypeStepdown || m.Reason != stepdown.ReasonProbeLost {
		t.Fatalf("got %v, want a probe_lost stepdown", m)
	}
	within(t, "probe_lost stepdown", t0, cfg.Triggers.ProbeLost.Grace)
	t1 := time.Now()
	ann.ProbeOK("x")
	if m := next(t, c); m.Type != stepdown.TypeResume {
		t.Fatalf("got %v, want a resume", m)
	}
	within(t, "resume", t1, cfg.HoldDown)
}

// TestHeartbeatWhileSubscribed: heartbeats reach a subscriber every
// stepdown.heartbeat, stop when the last subscriber leaves and start again
// with the next.
func TestHeartbeatWhileSubscribed(t *testing.T) {
	t.Parallel()
	cfg := testConfig(t)
	cfg.Heartbeat = 50 * time.Millisecond
	s, _ := start(t, cfg, socket.Options{})
	sent := func() float64 { return metricValue(t, s, socket.MetricMessagesSent, "type", stepdown.TypeHeartbeat) }
	time.Sleep(3 * cfg.Heartbeat)
	if n := sent(); n != 0 {
		t.Fatalf("%v heartbeats before any subscriber", n)
	}
	for round := range 2 {
		c, _ := dial(t, cfg.Socket)
		last := time.Now() // the hello
		for range 10 {
			c.SetReadDeadline(time.Now().Add(10 * time.Second))
			m, err := c.Read()
			if err != nil {
				t.Fatal(err)
			}
			if m.Type != stepdown.TypeHeartbeat || m.State != stepdown.StateOK {
				t.Fatalf("round %d: got %v, want a heartbeat", round, m)
			}
			// Aligned ticks: one period apart, the first within one.
			if gap := time.Since(last); gap > cfg.Heartbeat+onTime {
				t.Errorf("round %d: heartbeat %s after the last message, heartbeat %s", round, gap, cfg.Heartbeat)
			}
			last = time.Now()
		}
		c.Close()
		waitFor(t, "the subscriber to leave", func() bool { return s.Subscribers() == 0 })
		time.Sleep(2 * cfg.Heartbeat) // a beat already due may still go out
		n := sent()
		time.Sleep(4 * cfg.Heartbeat)
		if m := sent(); m != n {
			t.Errorf("round %d: %v heartbeats sent with no subscriber", round, m-n)
		}
	}
}
