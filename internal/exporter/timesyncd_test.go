package exporter

import (
	"net/netip"
	"strings"
	"testing"
	"time"

	"github.com/clockwatch/clockwatch/internal/loop"
	"github.com/clockwatch/clockwatch/internal/probe/timesyncd"
	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/testutil"
)

type fixedTimesyncd timesyncd.Snapshot

func (f fixedTimesyncd) Snapshot() timesyncd.Snapshot { return timesyncd.Snapshot(f) }

// syncedTimesyncd is a snapshot of a timesyncd synchronised to 192.0.2.1
// (2 ms behind it), read at `at`, its reply 10 s older.
func syncedTimesyncd(at time.Time) timesyncd.Snapshot {
	t1 := at.Add(-10 * time.Second).UnixMicro()
	return timesyncd.Snapshot{
		Props: timesyncd.Properties{
			ServerName: "ntp.example", ServerAddress: netip.MustParseAddr("192.0.2.1"),
			PollInterval: 64 * time.Second, Frequency: -12e-6,
			Message: timesyncd.NTPMessage{Version: 4, Mode: 4, Stratum: 2, Precision: -20,
				RootDelay: 4 * time.Millisecond, RootDispersion: time.Millisecond, RefID: [4]byte{198, 51, 100, 7},
				Origin: t1, Receive: t1 + 2000 + 4000, Transmit: t1 + 2000 + 6000, Destination: t1 + 10000,
				PacketCount: 12, Jitter: 150 * time.Microsecond},
		},
		HaveData: true, Found: true, Tally: loop.Tally{Up: true, LastSuccess: at.Add(-time.Second), Polls: 7, Failures: 1}, SampleSeen: at.Add(-10 * time.Second),
	}
}

func TestTimesyncdCollector(t *testing.T) {
	t.Parallel()
	at := time.Date(2026, 12, 1, 4, 0, 0, 0, time.UTC)
	absent := timesyncd.Snapshot{Tally: loop.Tally{Polls: 3, Err: timesyncd.ErrAbsent}}
	for _, tc := range []struct {
		name string
		snap timesyncd.Snapshot
		want string
	}{
		{name: "absent", snap: absent, want: `
# HELP clockwatch_timesyncd_found Whether systemd-timesyncd has been on the system bus since clockwatch started (or is pinned with mode on).
# TYPE clockwatch_timesyncd_found gauge
clockwatch_timesyncd_found 0
# HELP clockwatch_timesyncd_poll_failures_total Reads that failed while timesyncd was found or pinned.
# TYPE clockwatch_timesyncd_poll_failures_total counter
clockwatch_timesyncd_poll_failures_total 0
# HELP clockwatch_timesyncd_polls_total Reads of systemd-timesyncd since clockwatch started.
# TYPE clockwatch_timesyncd_polls_total counter
clockwatch_timesyncd_polls_total 3
# HELP clockwatch_timesyncd_up Whether the last read of systemd-timesyncd over D-Bus succeeded (1) or not (0).
# TYPE clockwatch_timesyncd_up gauge
clockwatch_timesyncd_up 0
`},
		{name: "synchronised", snap: syncedTimesyncd(at), want: `
# HELP clockwatch_timesyncd_clock_error_bound_seconds Largest error of the local clock timesyncd's figures allow: abs(offset) + delay/2 + root delay/2 + root dispersion + precision + 15 ppm x sample age.
# TYPE clockwatch_timesyncd_clock_error_bound_seconds gauge
clockwatch_timesyncd_clock_error_bound_seconds 0.009150953
# HELP clockwatch_timesyncd_found Whether systemd-timesyncd has been on the system bus since clockwatch started (or is pinned with mode on).
# TYPE clockwatch_timesyncd_found gauge
clockwatch_timesyncd_found 1
# HELP clockwatch_timesyncd_frequency_ratio Frequency correction timesyncd last set in the kernel.
# TYPE clockwatch_timesyncd_frequency_ratio gauge
clockwatch_timesyncd_frequency_ratio -1.2e-05
# HELP clockwatch_timesyncd_jitter_seconds timesyncd's jitter: the RMS of its last samples' offsets.
# TYPE clockwatch_timesyncd_jitter_seconds gauge
clockwatch_timesyncd_jitter_seconds 0.00015
# HELP clockwatch_timesyncd_leap_status Leap indicator of the last reply: 0 normal, 1 insert second, 2 delete second, 3 not synchronised.
# TYPE clockwatch_timesyncd_leap_status gauge
clockwatch_timesyncd_leap_status 0
# HELP clockwatch_timesyncd_offset_seconds Local clock minus true time now as timesyncd's figures say (positive: ahead): the last sample's offset, or 0 after timesyncd stepped the clock by it.
# TYPE clockwatch_timesyncd_offset_seconds gauge
clockwatch_timesyncd_offset_seconds -0.002
# HELP clockwatch_timesyncd_packets_total Replies timesyncd accepted since it started.
# TYPE clockwatch_timesyncd_packets_total counter
clockwatch_timesyncd_packets_total 12
# HELP clockwatch_timesyncd_poll_age_seconds Time since the last successful read.
# TYPE clockwatch_timesyncd_poll_age_seconds gauge
clockwatch_timesyncd_poll_age_seconds 1
# HELP clockwatch_timesyncd_poll_failures_total Reads that failed while timesyncd was found or pinned.
# TYPE clockwatch_timesyncd_poll_failures_total counter
clockwatch_timesyncd_poll_failures_total 1
# HELP clockwatch_timesyncd_poll_interval_seconds timesyncd's current interval between NTP requests.
# TYPE clockwatch_timesyncd_poll_interval_seconds gauge
clockwatch_timesyncd_poll_interval_seconds 64
# HELP clockwatch_timesyncd_polls_total Reads of systemd-timesyncd since clockwatch started.
# TYPE clockwatch_timesyncd_polls_total counter
clockwatch_timesyncd_polls_total 7
# HELP clockwatch_timesyncd_precision_seconds Precision of the server's clock.
# TYPE clockwatch_timesyncd_precision_seconds gauge
clockwatch_timesyncd_precision_seconds 9.53e-07
# HELP clockwatch_timesyncd_root_delay_seconds Root delay of the server, from its last reply.
# TYPE clockwatch_timesyncd_root_delay_seconds gauge
clockwatch_timesyncd_root_delay_seconds 0.004
# HELP clockwatch_timesyncd_root_dispersion_seconds Root dispersion of the server, from its last reply.
# TYPE clockwatch_timesyncd_root_dispersion_seconds gauge
clockwatch_timesyncd_root_dispersion_seconds 0.001
# HELP clockwatch_timesyncd_sample_age_seconds Time since timesyncd received its last reply.
# TYPE clockwatch_timesyncd_sample_age_seconds gauge
clockwatch_timesyncd_sample_age_seconds 10
# HELP clockwatch_timesyncd_sample_delay_seconds Round trip of the last NTP exchange.
# TYPE clockwatch_timesyncd_sample_delay_seconds gauge
clockwatch_timesyncd_sample_delay_seconds 0.008
# HELP clockwatch_timesyncd_sample_offset_seconds Local clock minus the server's in the last NTP exchange, ((T2-T1)+(T3-T4))/2 negated.
# TYPE clockwatch_timesyncd_sample_offset_seconds gauge
clockwatch_timesyncd_sample_offset_seconds -0.002
# HELP clockwatch_timesyncd_sample_spike Whether timesyncd ignored the last reply as a spike.
# TYPE clockwatch_timesyncd_sample_spike gauge
clockwatch_timesyncd_sample_spike 0
# HELP clockwatch_timesyncd_server_info Always 1: the server timesyncd uses and its reference ID.
# TYPE clockwatch_timesyncd_server_info gauge
clockwatch_timesyncd_server_info{ref_id="198.51.100.7",server_address="192.0.2.1",server_name="ntp.example"} 1
# HELP clockwatch_timesyncd_stratum Stratum of timesyncd's server.
# TYPE clockwatch_timesyncd_stratum gauge
clockwatch_timesyncd_stratum 2
# HELP clockwatch_timesyncd_synchronized Whether timesyncd's last reply is fresh (at most 2 poll intervals + 15 s old) and from a synchronised server.
# TYPE clockwatch_timesyncd_synchronized gauge
clockwatch_timesyncd_synchronized 1
# HELP clockwatch_timesyncd_up Whether the last read of systemd-timesyncd over D-Bus succeeded (1) or not (0).
# TYPE clockwatch_timesyncd_up gauge
clockwatch_timesyncd_up 1
`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			c := NewTimesyncdCollector(fixedTimesyncd(tc.snap))
			c.now = func() time.Time { return at }
			if err := testutil.CollectAndCompare(c, strings.NewReader(tc.want)); err != nil {
				t.Error(err)
			}
			if problems, err := testutil.CollectAndLint(c); err != nil || len(problems) > 0 {
				t.Errorf("lint: %v %+v", err, problems)
			}
		})
	}
}

func BenchmarkTimesyncdCollect(b *testing.B) {
	at := time.Now()
	c := NewTimesyncdCollector(fixedTimesyncd(syncedTimesyncd(at)))
	c.now = func() time.Time { return at }
	ch := make(chan prometheus.Metric, timesyncdMetrics)
	b.ReportAllocs()
	for b.Loop() {
		c.Collect(ch)
		for len(ch) > 0 {
			<-ch
		}
	}
}

// BenchmarkTimesyncdGather is the collector's share of a scrape: collect
// and gather through a registry of its own.
func BenchmarkTimesyncdGather(b *testing.B) {
	for _, tc := range []struct {
		name string
		snap timesyncd.Snapshot
	}{
		{"synchronised", syncedTimesyncd(time.Now())},
		{"absent", timesyncd.Snapshot{Tally: loop.Tally{Polls: 3, Err: timesyncd.ErrAbsent}}},
	} {
		b.Run(tc.name, func(b *testing.B) {
			reg := prometheus.NewPedanticRegistry()
			reg.MustRegister(NewTimesyncdCollector(fixedTimesyncd(tc.snap)))
			b.ReportAllocs()
			for b.Loop() {
				if _, err := reg.Gather(); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}
