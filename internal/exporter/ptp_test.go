package exporter

import (
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/clockwatch/clockwatch/internal/loop"
	"github.com/clockwatch/clockwatch/internal/metricsdoc"
	"github.com/clockwatch/clockwatch/internal/probe/ptp"
	"github.com/facebook/time/ptp/protocol"
	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/testutil"
)

type fixedPtp4l ptp.Snapshot

func (f fixedPtp4l) Snapshot() ptp.Snapshot { return ptp.Snapshot(f) }

func ptp4lSlave(at time.Time) ptp.Snapshot {
	return ptp.Snapshot{
		Address: ptp.DefaultSocket, Found: true, Tally: loop.Tally{Up: true, LastSuccess: at, PollDuration: 400 * time.Microsecond, Polls: 10, Failures: 1}, HaveData: true,
		State: protocol.PortStateSlave, StateSince: at.Add(-time.Minute),
		Grandmaster: "aaaaaa.fffe.000001", GrandmasterChanges: 2,
		Data: ptp.Data{ClockIdentity: "bbbbbb.fffe.000002", ClockClass: 255, ClockAccuracy: 0xfe, SlaveOnly: true, Domain: 0,
			Ports:        []ptp.Port{{Number: 1, Interface: "eth0", State: protocol.PortStateSlave, Timestamping: "HARDWARE"}},
			StepsRemoved: 1, OffsetFromMaster: -150 * time.Nanosecond, MeanPathDelay: 2 * time.Microsecond,
			ParentPort: "aaaaaa.fffe.000001-1", GrandmasterIdentity: "aaaaaa.fffe.000001", GrandmasterClockClass: 6,
			GrandmasterClockAccuracy: 0x21, GrandmasterPresent: true,
			Time: ptp.TimeProperties{CurrentUTCOffset: 37, UTCOffsetValid: true, PTPTimescale: true, TimeTraceable: true, Leap61: true}},
	}
}

func TestPtp4lCollector(t *testing.T) {
	t.Parallel()
	at := time.Date(2026, 12, 1, 12, 0, 0, 0, time.UTC)
	slave := ptp4lSlave(at)
	gm := slave
	gm.Data.ClockIdentity, gm.Data.ClockClass, gm.Data.ClockAccuracy = "aaaaaa.fffe.000001", 6, 0x21
	gm.Data.Ports = []ptp.Port{{Number: 1, Interface: "eth0", State: protocol.PortStateMaster, Timestamping: "SOFTWARE"}}
	gm.Data.GrandmasterPresent, gm.Data.StepsRemoved, gm.Data.ParentPort = false, 0, "aaaaaa.fffe.000001-0"
	gm.Data.GrandmasterClockAccuracy = 0xfe
	down := slave
	down.Up, down.Err, down.Polls, down.Failures = false, errors.New("ptp4l did not answer"), 11, 2
	pinned := ptp.Snapshot{Address: "/run/ptp4l-eth0", Found: true, Tally: loop.Tally{Err: errors.New("no socket"), Polls: 3, Failures: 3, PollDuration: time.Millisecond}}
	all := []string{MetricPtp4lUp, MetricPtp4lPolls, MetricPtp4lPollFailures, MetricPtp4lPollAge, MetricPtp4lPollDuration,
		MetricPtp4lInfo, MetricPtp4lPortInfo, MetricPtp4lStateAge, MetricPtp4lSynchronized, MetricPtp4lIsGrandmaster,
		MetricPtp4lClockClass, MetricPtp4lOffset, MetricPtp4lMeanPathDelay, MetricPtp4lErrorBound, MetricPtp4lStepsRemoved,
		MetricPtp4lGMInfo, MetricPtp4lGMClockClass, MetricPtp4lGMAccuracy, MetricPtp4lGMChanges, MetricPtp4lTimeTraceable,
		MetricPtp4lFreqTraceable, MetricPtp4lUTCOffset, MetricPtp4lLeapStatus}
	for _, tc := range []struct {
		name  string
		snap  ptp.Snapshot
		names []string
		want  string
	}{
		{name: "absent", snap: ptp.Snapshot{Address: ptp.DefaultSocket}, names: all, want: ""},
		{name: "pinned, never answered", snap: pinned, names: all, want: `
# HELP clockwatch_ptp4l_grandmaster_changes_total Changes from one grandmaster to another since clockwatch started (losing the master and finding the same one again is not a change).
# TYPE clockwatch_ptp4l_grandmaster_changes_total counter
clockwatch_ptp4l_grandmaster_changes_total 0
# HELP clockwatch_ptp4l_poll_duration_seconds How long the last poll of ptp4l took.
# TYPE clockwatch_ptp4l_poll_duration_seconds gauge
clockwatch_ptp4l_poll_duration_seconds 0.001
# HELP clockwatch_ptp4l_poll_failures_total Polls of ptp4l that failed.
# TYPE clockwatch_ptp4l_poll_failures_total counter
clockwatch_ptp4l_poll_failures_total 3
# HELP clockwatch_ptp4l_polls_total Polls of ptp4l since clockwatch started.
# TYPE clockwatch_ptp4l_polls_total counter
clockwatch_ptp4l_polls_total 3
# HELP clockwatch_ptp4l_up Whether the last poll of ptp4l's management socket succeeded (1) or not (0); absent while ptp4l was never found at its default socket.
# TYPE clockwatch_ptp4l_up gauge
clockwatch_ptp4l_up 0
`},
		{name: "slave", snap: slave, names: []string{MetricPtp4lUp, MetricPtp4lPortInfo, MetricPtp4lSynchronized, MetricPtp4lOffset,
			MetricPtp4lErrorBound, MetricPtp4lGMInfo, MetricPtp4lGMAccuracy, MetricPtp4lStateAge, MetricPtp4lLeapStatus, MetricPtp4lGMChanges}, want: `
# HELP clockwatch_ptp4l_clock_error_bound_seconds Largest error of this clock that ptp4l's figures allow: |offset| + mean path delay + the grandmaster's announced accuracy.
# TYPE clockwatch_ptp4l_clock_error_bound_seconds gauge
clockwatch_ptp4l_clock_error_bound_seconds 2.25e-06
# HELP clockwatch_ptp4l_grandmaster_changes_total Changes from one grandmaster to another since clockwatch started (losing the master and finding the same one again is not a change).
# TYPE clockwatch_ptp4l_grandmaster_changes_total counter
clockwatch_ptp4l_grandmaster_changes_total 2
# HELP clockwatch_ptp4l_grandmaster_clock_accuracy_seconds The grandmaster's announced clock accuracy; absent when it announces unknown (0xFE).
# TYPE clockwatch_ptp4l_grandmaster_clock_accuracy_seconds gauge
clockwatch_ptp4l_grandmaster_clock_accuracy_seconds 1e-07
# HELP clockwatch_ptp4l_grandmaster_info The grandmaster and the master port this clock follows.
# TYPE clockwatch_ptp4l_grandmaster_info gauge
clockwatch_ptp4l_grandmaster_info{grandmaster_identity="aaaaaa.fffe.000001",parent_port="aaaaaa.fffe.000001-1"} 1
# HELP clockwatch_ptp4l_leap_status Leap second the grandmaster announces for the end of the UTC day: 0 none, 1 insert (leap61), 2 delete (leap59).
# TYPE clockwatch_ptp4l_leap_status gauge
clockwatch_ptp4l_leap_status 1
# HELP clockwatch_ptp4l_offset_from_master_seconds This clock minus the master's (positive: this clock is ahead), ptp4l's offsetFromMaster. With hardware timestamping it is the PHC's offset.
# TYPE clockwatch_ptp4l_offset_from_master_seconds gauge
clockwatch_ptp4l_offset_from_master_seconds -1.5e-07
# HELP clockwatch_ptp4l_port_info One series per PTP port with its state (SLAVE, UNCALIBRATED, MASTER, LISTENING, ...) and timestamping.
# TYPE clockwatch_ptp4l_port_info gauge
clockwatch_ptp4l_port_info{interface="eth0",port="1",state="SLAVE",timestamping="HARDWARE"} 1
# HELP clockwatch_ptp4l_state_age_seconds Time since the clock's port state (its best port's: SLAVE before UNCALIBRATED before MASTER) last changed, as seen by clockwatch's polls.
# TYPE clockwatch_ptp4l_state_age_seconds gauge
clockwatch_ptp4l_state_age_seconds 62
# HELP clockwatch_ptp4l_synchronized Whether ptp4l is synchronised: a port in SLAVE, or a grandmaster traceable to a primary reference.
# TYPE clockwatch_ptp4l_synchronized gauge
clockwatch_ptp4l_synchronized 1
# HELP clockwatch_ptp4l_up Whether the last poll of ptp4l's management socket succeeded (1) or not (0); absent while ptp4l was never found at its default socket.
# TYPE clockwatch_ptp4l_up gauge
clockwatch_ptp4l_up 1
`},
		{name: "grandmaster", snap: gm, names: []string{MetricPtp4lIsGrandmaster, MetricPtp4lOffset, MetricPtp4lErrorBound, MetricPtp4lGMAccuracy, MetricPtp4lSynchronized}, want: `
# HELP clockwatch_ptp4l_clock_error_bound_seconds Largest error of this clock that ptp4l's figures allow: |offset| + mean path delay + the grandmaster's announced accuracy.
# TYPE clockwatch_ptp4l_clock_error_bound_seconds gauge
clockwatch_ptp4l_clock_error_bound_seconds 1e-07
# HELP clockwatch_ptp4l_is_grandmaster Whether this clock is the grandmaster of its domain.
# TYPE clockwatch_ptp4l_is_grandmaster gauge
clockwatch_ptp4l_is_grandmaster 1
# HELP clockwatch_ptp4l_synchronized Whether ptp4l is synchronised: a port in SLAVE, or a grandmaster traceable to a primary reference.
# TYPE clockwatch_ptp4l_synchronized gauge
clockwatch_ptp4l_synchronized 1
`},
		{name: "down: counters and age, no stale figures", snap: down, names: []string{MetricPtp4lUp, MetricPtp4lPollAge, MetricPtp4lOffset, MetricPtp4lPortInfo}, want: `
# HELP clockwatch_ptp4l_poll_age_seconds Time since the last successful poll of ptp4l.
# TYPE clockwatch_ptp4l_poll_age_seconds gauge
clockwatch_ptp4l_poll_age_seconds 2
# HELP clockwatch_ptp4l_up Whether the last poll of ptp4l's management socket succeeded (1) or not (0); absent while ptp4l was never found at its default socket.
# TYPE clockwatch_ptp4l_up gauge
clockwatch_ptp4l_up 0
`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			c := NewPtp4lCollector(fixedPtp4l(tc.snap))
			c.now = func() time.Time { return at.Add(2 * time.Second) }
			for range 2 { // the second scrape reuses the label pairs
				if err := testutil.CollectAndCompare(c, strings.NewReader(tc.want), tc.names...); err != nil {
					t.Error(err)
				}
			}
			problems, err := testutil.CollectAndLint(c)
			if err != nil {
				t.Fatal(err)
			}
			for _, pr := range problems {
				t.Errorf("lint: %s: %s", pr.Metric, pr.Text)
			}
			reg := prometheus.NewPedanticRegistry()
			reg.MustRegister(c)
			if _, err := reg.Gather(); err != nil {
				t.Errorf("pedantic registry: %v", err)
			}
		})
	}
}

// TestPtp4lDocumented: every series the collector can export is in
// docs/metrics.md's ptp4l section with its type, and nothing else is.
func TestPtp4lDocumented(t *testing.T) {
	t.Parallel()
	doc, err := metricsdoc.Read("../../docs/metrics.md")
	if err != nil {
		t.Fatal(err)
	}
	reg := prometheus.NewPedanticRegistry()
	reg.MustRegister(NewPtp4lCollector(fixedPtp4l(ptp4lSlave(time.Now()))))
	mfs, err := reg.Gather()
	if err != nil {
		t.Fatal(err)
	}
	exported := map[string]string{}
	for _, mf := range mfs {
		exported[mf.GetName()] = strings.ToLower(mf.GetType().String())
	}
	descs := make(chan *prometheus.Desc, 64)
	NewPtp4lCollector(fixedPtp4l(ptp.Snapshot{})).Describe(descs)
	close(descs)
	n := 0
	for range descs {
		n++
	}
	if n != len(exported) {
		t.Errorf("the slave fixture exports %d families, Describe lists %d: make the fixture export every one", len(exported), n)
	}
	for name, typ := range exported {
		m, ok := doc[name]
		switch {
		case !ok:
			t.Errorf("%s (%s) is exported but not in docs/metrics.md", name, typ)
		case m.Type != typ || m.Section != "ptp4l":
			t.Errorf("%s is a %s, docs/metrics.md says %s under %q", name, typ, m.Type, m.Section)
		case !m.Conditional():
			t.Errorf("%s: its meaning must start with \"Only when\": an absent ptp4l exports nothing", name)
		}
	}
	for name, m := range doc {
		if _, ok := exported[name]; m.Section == "ptp4l" && !ok {
			t.Errorf("%s is in docs/metrics.md but the collector does not export it", name)
		}
	}
}

// TestPtp4lCollectorLabelsChange: a port state change shows in the next
// scrape (the label cache is rebuilt).
func TestPtp4lCollectorLabelsChange(t *testing.T) {
	t.Parallel()
	s := ptp4lSlave(time.Now())
	src := &mutablePtp4l{s: s}
	c := NewPtp4lCollector(src)
	want := func(state string) string {
		return `
# HELP clockwatch_ptp4l_port_info One series per PTP port with its state (SLAVE, UNCALIBRATED, MASTER, LISTENING, ...) and timestamping.
# TYPE clockwatch_ptp4l_port_info gauge
clockwatch_ptp4l_port_info{interface="eth0",port="1",state="` + state + `",timestamping="HARDWARE"} 1
`
	}
	if err := testutil.CollectAndCompare(c, strings.NewReader(want("SLAVE")), MetricPtp4lPortInfo); err != nil {
		t.Error(err)
	}
	s.Data.Ports = []ptp.Port{{Number: 1, Interface: "eth0", State: protocol.PortStateUncalibrated, Timestamping: "HARDWARE"}}
	src.s = s
	if err := testutil.CollectAndCompare(c, strings.NewReader(want("UNCALIBRATED")), MetricPtp4lPortInfo); err != nil {
		t.Error(err)
	}
}

type mutablePtp4l struct{ s ptp.Snapshot }

func (m *mutablePtp4l) Snapshot() ptp.Snapshot { return m.s }

// BenchmarkPtp4lCollect is the scrape-time cost of the ptp4l source: one
// Collect of a slave with one port, its metrics written out as a registry
// would. It never talks to ptp4l.
func BenchmarkPtp4lCollect(b *testing.B) { benchmarkGather(b, ptp4lSlave(time.Now())) }

// BenchmarkPtp4lCollectAbsent is the cost of the source on a node without
// ptp4l: the registry's own, Collect returns at once.
func BenchmarkPtp4lCollectAbsent(b *testing.B) {
	benchmarkGather(b, ptp.Snapshot{Address: ptp.DefaultSocket})
}

func benchmarkGather(b *testing.B, s ptp.Snapshot) {
	reg := prometheus.NewPedanticRegistry()
	reg.MustRegister(NewPtp4lCollector(fixedPtp4l(s)))
	b.ReportAllocs()
	for b.Loop() {
		if _, err := reg.Gather(); err != nil {
			b.Fatal(err)
		}
	}
}

// BenchmarkPtp4lCollectOnly is Collect alone, its metrics drained from the
// channel and not written out.
func BenchmarkPtp4lCollectOnly(b *testing.B) {
	c := NewPtp4lCollector(fixedPtp4l(ptp4lSlave(time.Now())))
	ch := make(chan prometheus.Metric, 64)
	b.ReportAllocs()
	for b.Loop() {
		c.Collect(ch)
		for len(ch) > 0 {
			<-ch
		}
	}
}
