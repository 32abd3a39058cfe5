package exporter

import (
	"strings"
	"testing"
	"time"

	"github.com/clockwatch/clockwatch/internal/loop"
	"github.com/clockwatch/clockwatch/internal/probe/chrony"
	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/testutil"
)

type fixedChronyServer chrony.ServerSnapshot

func (f fixedChronyServer) Snapshot() chrony.ServerSnapshot { return chrony.ServerSnapshot(f) }

func TestChronyServerCollector(t *testing.T) {
	t.Parallel()
	at := time.Date(2026, 12, 1, 4, 0, 0, 0, time.UTC)
	serving := chrony.ServerSnapshot{
		Data: chrony.ServerData{Stats: chrony.ServerStats{Version: 3, NTPHits: 120, NTPDrops: 2, NKEHits: 4, CmdHits: 50,
			NTPAuthHits: 4, NTPTimestamps: 8, NTPSpan: 30 * time.Second}, Clients: 3},
		HaveData: true, Serving: true, Tally: loop.Tally{Up: true, LastSuccess: at.Add(-2 * time.Second), Polls: 2},
	}
	for _, tc := range []struct {
		name  string
		snap  chrony.ServerSnapshot
		names []string
		want  string
	}{
		{name: "pure client", snap: chrony.ServerSnapshot{HaveData: true, Tally: loop.Tally{Up: true, Polls: 1}}, want: ""},
		{name: "serving", snap: serving, names: []string{MetricChronyServerNTPRequests, MetricChronyServerNKEConnections,
			MetricChronyServerClients, MetricChronyServerStatsUp, MetricChronyServerTimestampSpan, MetricChronyServerRxTimestamps}, want: `
# HELP clockwatch_chrony_server_clients Clients in chronyd's client log that sent NTP requests or NTS-KE connections.
# TYPE clockwatch_chrony_server_clients gauge
clockwatch_chrony_server_clients 3
# HELP clockwatch_chrony_server_interleaved_timestamps_span_seconds Time span of those timestamps.
# TYPE clockwatch_chrony_server_interleaved_timestamps_span_seconds gauge
clockwatch_chrony_server_interleaved_timestamps_span_seconds 30
# HELP clockwatch_chrony_server_ntp_requests_total NTP requests chronyd received as a server.
# TYPE clockwatch_chrony_server_ntp_requests_total counter
clockwatch_chrony_server_ntp_requests_total 120
# HELP clockwatch_chrony_server_nts_ke_connections_total NTS-KE connections chronyd accepted.
# TYPE clockwatch_chrony_server_nts_ke_connections_total counter
clockwatch_chrony_server_nts_ke_connections_total 4
# HELP clockwatch_chrony_server_stats_up Whether chronyd's server statistics could be read (its unix socket only).
# TYPE clockwatch_chrony_server_stats_up gauge
clockwatch_chrony_server_stats_up 1
`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			c := NewChronyServerCollector(fixedChronyServer(tc.snap))
			c.now = func() time.Time { return at }
			if err := testutil.CollectAndCompare(c, strings.NewReader(tc.want), tc.names...); err != nil {
				t.Error(err)
			}
			if n := testutil.CollectAndCount(c); tc.want == "" && n != 0 {
				t.Errorf("a pure client exports %d server series, want none", n)
			}
			if problems, err := testutil.CollectAndLint(c); err != nil || len(problems) > 0 {
				t.Errorf("lint: %v %+v", err, problems)
			}
		})
	}
}

func BenchmarkChronyServerGather(b *testing.B) {
	reg := prometheus.NewPedanticRegistry()
	reg.MustRegister(NewChronyServerCollector(fixedChronyServer(chrony.ServerSnapshot{
		Data:     chrony.ServerData{Stats: chrony.ServerStats{Version: 4, NTPHits: 120}, Clients: 3},
		HaveData: true, Serving: true, Tally: loop.Tally{Up: true, LastSuccess: time.Now()},
	})))
	b.ReportAllocs()
	for b.Loop() {
		if _, err := reg.Gather(); err != nil {
			b.Fatal(err)
		}
	}
}
