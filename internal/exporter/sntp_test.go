package exporter

import (
	"strings"
	"testing"
	"time"

	"github.com/clockwatch/clockwatch/internal/probe/sntp"
	"github.com/prometheus/client_golang/prometheus/testutil"
)

type fixedNTPResults []sntp.Result

func (f fixedNTPResults) Results() []sntp.Result { return f }

func TestNTPProbeCollector(t *testing.T) {
	t.Parallel()
	at := time.Date(2026, 11, 30, 4, 0, 0, 0, time.UTC)
	c := NewNTPProbeCollector(fixedNTPResults{
		{Server: "time.example", OK: true, At: at, LastGood: at, Queries: 8, QueryErrors: 1,
			Best: sntp.Sample{Offset: -0.002, RTT: 3 * time.Millisecond, Stratum: 1, RootDelay: time.Millisecond,
				RootDispersion: 2 * time.Millisecond, RootDistance: 4 * time.Millisecond}, KissCodes: map[string]uint64{}},
		{Server: "127.0.0.1:10123", At: at, Queries: 2, ValidateFailures: 1, KissCodes: map[string]uint64{"RATE": 1}},
	})
	c.now = func() time.Time { return at.Add(30 * time.Second) }
	want := `
# HELP clockwatch_ntp_probe_kiss_codes_total Kiss-o'-death answers by code (RATE: query less often; DENY, RSTR: access refused).
# TYPE clockwatch_ntp_probe_kiss_codes_total counter
clockwatch_ntp_probe_kiss_codes_total{code="RATE",server="127.0.0.1:10123"} 1
# HELP clockwatch_ntp_probe_leap Leap indicator the server reported: 0 none, 1 insert, 2 delete, 3 not synchronised.
# TYPE clockwatch_ntp_probe_leap gauge
clockwatch_ntp_probe_leap{server="time.example"} 0
# HELP clockwatch_ntp_probe_offset_seconds Local clock minus the server's clock (positive: local ahead), from the sample with the smallest round trip of the last good round.
# TYPE clockwatch_ntp_probe_offset_seconds gauge
clockwatch_ntp_probe_offset_seconds{server="time.example"} -0.002
# HELP clockwatch_ntp_probe_queries_total NTP queries sent to the server.
# TYPE clockwatch_ntp_probe_queries_total counter
clockwatch_ntp_probe_queries_total{server="127.0.0.1:10123"} 2
clockwatch_ntp_probe_queries_total{server="time.example"} 8
# HELP clockwatch_ntp_probe_query_errors_total Queries that got no answer (timeout, unreachable, name not resolved).
# TYPE clockwatch_ntp_probe_query_errors_total counter
clockwatch_ntp_probe_query_errors_total{server="127.0.0.1:10123"} 0
clockwatch_ntp_probe_query_errors_total{server="time.example"} 1
# HELP clockwatch_ntp_probe_root_delay_seconds Root delay the server reported.
# TYPE clockwatch_ntp_probe_root_delay_seconds gauge
clockwatch_ntp_probe_root_delay_seconds{server="time.example"} 0.001
# HELP clockwatch_ntp_probe_root_dispersion_seconds Root dispersion the server reported.
# TYPE clockwatch_ntp_probe_root_dispersion_seconds gauge
clockwatch_ntp_probe_root_dispersion_seconds{server="time.example"} 0.002
# HELP clockwatch_ntp_probe_root_distance_seconds Root distance of the sample: the server's root dispersion + root delay/2, with this query's share.
# TYPE clockwatch_ntp_probe_root_distance_seconds gauge
clockwatch_ntp_probe_root_distance_seconds{server="time.example"} 0.004
# HELP clockwatch_ntp_probe_rtt_seconds Round trip of that sample.
# TYPE clockwatch_ntp_probe_rtt_seconds gauge
clockwatch_ntp_probe_rtt_seconds{server="time.example"} 0.003
# HELP clockwatch_ntp_probe_sample_age_seconds Time since that sample was taken.
# TYPE clockwatch_ntp_probe_sample_age_seconds gauge
clockwatch_ntp_probe_sample_age_seconds{server="time.example"} 30
# HELP clockwatch_ntp_probe_stratum Stratum the server reported.
# TYPE clockwatch_ntp_probe_stratum gauge
clockwatch_ntp_probe_stratum{server="time.example"} 1
# HELP clockwatch_ntp_probe_up Whether the last round of queries to the server got a valid answer.
# TYPE clockwatch_ntp_probe_up gauge
clockwatch_ntp_probe_up{server="127.0.0.1:10123"} 0
clockwatch_ntp_probe_up{server="time.example"} 1
# HELP clockwatch_ntp_probe_validate_failures_total Answers rejected as unusable (kiss-o'-death, unsynchronised, stale, invalid fields).
# TYPE clockwatch_ntp_probe_validate_failures_total counter
clockwatch_ntp_probe_validate_failures_total{server="127.0.0.1:10123"} 1
clockwatch_ntp_probe_validate_failures_total{server="time.example"} 0
`
	if err := testutil.CollectAndCompare(c, strings.NewReader(want)); err != nil {
		t.Error(err)
	}
	problems, err := testutil.CollectAndLint(c)
	if err != nil {
		t.Fatal(err)
	}
	for _, p := range problems {
		t.Errorf("lint: %s: %s", p.Metric, p.Text)
	}
}
