package exporter

import (
	"errors"
	"log/slog"
	"strings"
	"testing"
	"time"

	"github.com/clockwatch/clockwatch/internal/loop"
	"github.com/clockwatch/clockwatch/internal/probe/ntpd"
	"github.com/prometheus/client_golang/prometheus/testutil"
)

type fixedNtpd ntpd.Snapshot

func (f fixedNtpd) Snapshot() ntpd.Snapshot { return ntpd.Snapshot(f) }

func TestNtpdUpdater(t *testing.T) {
	t.Parallel()
	at := time.Date(2026, 11, 30, 4, 0, 0, 0, time.UTC)
	up := ntpd.Snapshot{
		Data: ntpd.Data{
			System: ntpd.System{Version: "ntpd ntpsec-1.2.2", Stratum: 2, RefID: "192.0.2.1", Offset: -0.002, SysJitter: 1e-4,
				ClockJitter: 2e-4, Frequency: -3.5e-6, RootDelay: 0.004, RootDispersion: 0.001},
			Peers: []ntpd.Peer{{AssociationID: 1, Address: "192.0.2.1", RefID: "GPS", Selection: "sys.peer", Stratum: 1,
				Reach: 0x7f, Poll: 64 * time.Second, Offset: -0.0021, Delay: 3e-4, Jitter: 1e-4, Dispersion: 0.0012}},
		},
		Found: true, HaveData: true, Tally: loop.Tally{Up: true, LastSuccess: at, Polls: 3, Failures: 1},
	}
	down := up
	down.Up, down.Err, down.Polls, down.Failures = false, errors.New("nothing listens on 127.0.0.1:123"), 4, 2
	for _, tc := range []struct {
		name  string
		snap  ntpd.Snapshot
		want  string
		names []string
	}{
		{name: "up", snap: up, names: []string{MetricNtpdOffset, MetricNtpdErrorBound, MetricNtpdSynchronized, MetricNtpdPeerInfo, MetricNtpdPeerReachability, MetricNtpdPollAge, "clockwatch_ntpd_up"}, want: `
# HELP clockwatch_ntpd_clock_error_bound_seconds Largest error of the local clock that ntpd's figures allow: |offset| + root dispersion + root delay / 2.
# TYPE clockwatch_ntpd_clock_error_bound_seconds gauge
clockwatch_ntpd_clock_error_bound_seconds 0.005
# HELP clockwatch_ntpd_offset_seconds Local clock minus true time as ntpd estimates it (positive: the clock is ahead; ntpd's offset negated).
# TYPE clockwatch_ntpd_offset_seconds gauge
clockwatch_ntpd_offset_seconds -0.002
# HELP clockwatch_ntpd_peer_info One series per association with its reference ID and selection (sys.peer, candidate, backup, outlier, falsetick, excess, reject, pps.peer).
# TYPE clockwatch_ntpd_peer_info gauge
clockwatch_ntpd_peer_info{address="192.0.2.1",association="1",ref_id="GPS",selection="sys.peer"} 1
# HELP clockwatch_ntpd_peer_reachability_ratio Share of the last 8 polls the peer answered.
# TYPE clockwatch_ntpd_peer_reachability_ratio gauge
clockwatch_ntpd_peer_reachability_ratio{address="192.0.2.1",association="1"} 0.875
# HELP clockwatch_ntpd_poll_age_seconds Time since the last successful poll of ntpd.
# TYPE clockwatch_ntpd_poll_age_seconds gauge
clockwatch_ntpd_poll_age_seconds 2
# HELP clockwatch_ntpd_synchronized Whether ntpd is synchronised (leap indicator not 3, stratum below 16).
# TYPE clockwatch_ntpd_synchronized gauge
clockwatch_ntpd_synchronized 1
# HELP clockwatch_ntpd_up Whether the ntpd probe could be read (1) or not (0).
# TYPE clockwatch_ntpd_up gauge
clockwatch_ntpd_up 1
`},
		{name: "down", snap: down, names: []string{MetricNtpdOffset, MetricNtpdPolls, MetricNtpdPollFailures, "clockwatch_ntpd_up"}, want: `
# HELP clockwatch_ntpd_poll_failures_total Polls of ntpd that failed.
# TYPE clockwatch_ntpd_poll_failures_total counter
clockwatch_ntpd_poll_failures_total 2
# HELP clockwatch_ntpd_polls_total Polls of ntpd since clockwatch started.
# TYPE clockwatch_ntpd_polls_total counter
clockwatch_ntpd_polls_total 4
# HELP clockwatch_ntpd_up Whether the ntpd probe could be read (1) or not (0).
# TYPE clockwatch_ntpd_up gauge
clockwatch_ntpd_up 0
`},
		// "auto" without ntpd: not even clockwatch_ntpd_up 0.
		{name: "absent", snap: ntpd.Snapshot{Tally: loop.Tally{Err: errors.New("ntpd is absent")}}, names: []string{MetricNtpdOffset, MetricNtpdPolls, "clockwatch_ntpd_up", MetricCollectorSuccess}, want: ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			p := NewNtpdUpdater(fixedNtpd(tc.snap))
			p.now = func() time.Time { return at.Add(2 * time.Second) }
			s := NewScraper(slog.New(slog.DiscardHandler), p)
			if err := testutil.CollectAndCompare(s, strings.NewReader(tc.want), tc.names...); err != nil {
				t.Error(err)
			}
			problems, err := testutil.CollectAndLint(s)
			if err != nil {
				t.Fatal(err)
			}
			for _, pr := range problems {
				t.Errorf("lint: %s: %s", pr.Metric, pr.Text)
			}
		})
	}
}
