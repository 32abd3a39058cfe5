package socket_test

import (
	"strings"
	"testing"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/testutil"

	"github.com/clockwatch/clockwatch/internal/announce"
	"github.com/clockwatch/clockwatch/internal/policy"
	"github.com/clockwatch/clockwatch/internal/transport/socket"
	"github.com/clockwatch/clockwatch/stepdown"
)

func TestMetrics(t *testing.T) {
	t.Parallel()
	cfg := testConfig(t)
	s, ann := start(t, cfg, socket.Options{}, announce.Options{Epoch: 5})
	c, _ := dial(t, cfg.Socket)
	c.Send(stepdown.Message{Type: stepdown.TypeDrill, HoldSeconds: 0.01})
	m := next(t, c)
	c.Ack(m.Seq)
	next(t, c) // resume
	waitFor(t, "the ack", func() bool { return metricValue(t, s, socket.MetricAcks) == 1 })

	for _, c := range []prometheus.Collector{s.Collector(), ann.Collector()} {
		if problems, err := testutil.CollectAndLint(c); err != nil || len(problems) > 0 {
			t.Fatalf("lint: %v %v", problems, err)
		}
	}
	// The socket's metrics and the announcer's, as the daemon registers
	// them.
	reg := prometheus.NewPedanticRegistry()
	reg.MustRegister(s.Collector(), ann.Collector())
	want := `
# HELP clockwatch_stepdown_acks_total Acks received from stepdown clients for events they were sent.
# TYPE clockwatch_stepdown_acks_total counter
clockwatch_stepdown_acks_total 1
# HELP clockwatch_stepdown_connections_total Connections accepted on the stepdown socket.
# TYPE clockwatch_stepdown_connections_total counter
clockwatch_stepdown_connections_total 1
# HELP clockwatch_stepdown_epoch Clock epoch announced to stepdown clients (counts clock steps, persisted).
# TYPE clockwatch_stepdown_epoch gauge
clockwatch_stepdown_epoch 5
# HELP clockwatch_stepdown_events_total Stepdown and resume events announced, by type and reason (each is sent to every subscriber).
# TYPE clockwatch_stepdown_events_total counter
clockwatch_stepdown_events_total{drill="false",reason="error_bound",type="resume"} 0
clockwatch_stepdown_events_total{drill="false",reason="error_bound",type="stepdown"} 0
clockwatch_stepdown_events_total{drill="false",reason="grandmaster_changed",type="resume"} 0
clockwatch_stepdown_events_total{drill="false",reason="grandmaster_changed",type="stepdown"} 0
clockwatch_stepdown_events_total{drill="false",reason="offset",type="resume"} 0
clockwatch_stepdown_events_total{drill="false",reason="offset",type="stepdown"} 0
clockwatch_stepdown_events_total{drill="false",reason="peer_offset",type="resume"} 0
clockwatch_stepdown_events_total{drill="false",reason="peer_offset",type="stepdown"} 0
clockwatch_stepdown_events_total{drill="false",reason="probe_lost",type="resume"} 0
clockwatch_stepdown_events_total{drill="false",reason="probe_lost",type="stepdown"} 0
clockwatch_stepdown_events_total{drill="false",reason="starting",type="resume"} 1
clockwatch_stepdown_events_total{drill="false",reason="step",type="resume"} 0
clockwatch_stepdown_events_total{drill="false",reason="step",type="stepdown"} 0
clockwatch_stepdown_events_total{drill="false",reason="suspend",type="resume"} 0
clockwatch_stepdown_events_total{drill="false",reason="suspend",type="stepdown"} 0
clockwatch_stepdown_events_total{drill="false",reason="unsynchronized",type="resume"} 0
clockwatch_stepdown_events_total{drill="false",reason="unsynchronized",type="stepdown"} 0
clockwatch_stepdown_events_total{drill="false",reason="vm_disruption",type="resume"} 0
clockwatch_stepdown_events_total{drill="false",reason="vm_disruption",type="stepdown"} 0
clockwatch_stepdown_events_total{drill="true",reason="drill",type="resume"} 1
clockwatch_stepdown_events_total{drill="true",reason="drill",type="stepdown"} 1
# HELP clockwatch_stepdown_drills_total Drill requests, by result (started, forbidden, busy, bad_request).
# TYPE clockwatch_stepdown_drills_total counter
clockwatch_stepdown_drills_total{result="bad_request"} 0
clockwatch_stepdown_drills_total{result="busy"} 0
clockwatch_stepdown_drills_total{result="forbidden"} 0
clockwatch_stepdown_drills_total{result="started"} 1
# HELP clockwatch_stepdown_state Stepdown state announced to clients: 1 for the current state, 0 for the others.
# TYPE clockwatch_stepdown_state gauge
clockwatch_stepdown_state{state="ok"} 1
clockwatch_stepdown_state{state="stepdown"} 0
clockwatch_stepdown_state{state="unknown"} 0
# HELP clockwatch_stepdown_subscribers Clients connected to the stepdown socket.
# TYPE clockwatch_stepdown_subscribers gauge
clockwatch_stepdown_subscribers 1
`
	if err := testutil.GatherAndCompare(reg, strings.NewReader(want),
		socket.MetricAcks, socket.MetricConnections, announce.MetricEpoch, announce.MetricEvents, socket.MetricDrills,
		announce.MetricState, socket.MetricSubscribers); err != nil {
		t.Error(err)
	}
	if n := testutil.CollectAndCount(s.Collector(), socket.MetricAckLatency); n != 1 {
		t.Errorf("%d ack latency histograms", n)
	}
}

// TestAckOfHelloNotTimed acks the seq a hello carries (an event sent before
// the connection, maybe long ago): counted as an ack, never as a latency.
func TestAckOfHelloNotTimed(t *testing.T) {
	t.Parallel()
	cfg := testConfig(t)
	s, ann := start(t, cfg, socket.Options{})
	c, hello := dial(t, cfg.Socket)
	if hello.Seq == 0 {
		t.Fatalf("hello %v: want the seq of the start's resume", hello)
	}
	c.Ack(hello.Seq)
	waitFor(t, "the ack", func() bool { return metricValue(t, s, socket.MetricAcks) == 1 })
	if n := histogramCount(t, s); n != 0 {
		t.Errorf("ack latency observed %d times after acking a hello, want 0", n)
	}
	ann.Step(policy.Step{Seconds: 1})
	m := next(t, c)
	c.Ack(m.Seq)
	waitFor(t, "the second ack", func() bool { return metricValue(t, s, socket.MetricAcks) == 2 })
	if n := histogramCount(t, s); n != 1 {
		t.Errorf("ack latency observed %d times after acking an event sent, want 1", n)
	}
}

func histogramCount(t *testing.T, s *socket.Server) uint64 {
	t.Helper()
	mf := gather(t, s)[socket.MetricAckLatency]
	if mf == nil {
		return 0
	}
	return mf.GetMetric()[0].GetHistogram().GetSampleCount()
}
