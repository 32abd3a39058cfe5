package exporter

import (
	"errors"
	"log/slog"
	"strings"
	"testing"
	"time"

	"github.com/clockwatch/clockwatch/internal/loop"
	"github.com/clockwatch/clockwatch/internal/probe/chrony"
	"github.com/google/go-cmp/cmp"
	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/testutil"
	"github.com/prometheus/common/expfmt"
)

type fixedSnapshot chrony.Snapshot

func (f fixedSnapshot) Snapshot() chrony.Snapshot { return chrony.Snapshot(f) }

var chronyTestStart = time.Date(2026, 11, 30, 4, 0, 0, 0, time.UTC)

func chronySnapshot() chrony.Snapshot {
	return chrony.Snapshot{
		Data: chrony.Data{
			Tracking: chrony.Tracking{
				RefID: 0x7F00000B, RefName: "127.0.0.11", Address: "127.0.0.11", Stratum: 2, Leap: chrony.LeapNormal,
				RefTime:      chronyTestStart.Add(-time.Second),
				SystemOffset: -0.002, LastOffset: 1e-5, RMSOffset: 2e-5, Frequency: -3e-6, ResidualFrequency: 1e-9,
				Skew: 2e-8, RootDelay: 0.004, RootDispersion: 0.001, UpdateInterval: 64,
			},
			Sources: []chrony.Source{
				{Address: "127.0.0.11", Name: "ntp1.example", Mode: "client", State: "sync", Stratum: 1, Poll: 64 * time.Second,
					Reachability: 0xfe, LastSampleAge: 10 * time.Second, LastSampleOffset: 3e-5, LastSampleError: 5e-4,
					Stats: &chrony.SourceStats{Samples: 8, Runs: 5, Span: 448 * time.Second, StdDev: 1e-5, EstimatedOffset: 2e-5,
						EstimatedOffsetError: 4e-4, ResidualFrequency: 1e-9, Skew: 3e-8}},
				{Address: "127.0.0.12", Name: "127.0.0.12", Mode: "client", State: "unreach", Poll: time.Second, LastSampleAge: -1},
			},
		},
		HaveData: true, Transport: chrony.TransportUnix, Address: "/run/chrony/chronyd.sock", LastAttempt: chronyTestStart,
		Tally: loop.Tally{Up: true, LastSuccess: chronyTestStart, PollDuration: 300 * time.Microsecond, Polls: 10, Failures: 1},
		Audit: &chrony.Audit{MakeStep: &chrony.MakeStep{Threshold: 1, Limit: -1}, MaxSlewRate: 500e-6},
	}
}

func TestChronyUpdater(t *testing.T) {
	t.Parallel()
	down := chronySnapshot()
	down.Up, down.Err, down.Polls, down.Failures = false, errors.New("chronyd is gone"), 12, 3
	down.Audit, down.AuditErr = nil, errors.New("no chrony.conf")
	for _, tc := range []struct {
		name string
		snap chrony.Snapshot
		want string
	}{
		{name: "not polled yet", snap: chrony.Snapshot{}, want: `
# HELP clockwatch_chrony_poll_failures_total Polls of chronyd that failed.
# TYPE clockwatch_chrony_poll_failures_total counter
clockwatch_chrony_poll_failures_total 0
# HELP clockwatch_chrony_polls_total Polls of chronyd since clockwatch started.
# TYPE clockwatch_chrony_polls_total counter
clockwatch_chrony_polls_total 0
# HELP clockwatch_chrony_up Whether the chrony probe could be read (1) or not (0).
# TYPE clockwatch_chrony_up gauge
clockwatch_chrony_up 0
`},
		{name: "down", snap: down, want: `
# HELP clockwatch_chrony_config_audit_success Whether chrony.conf (and what it includes) could be read and understood.
# TYPE clockwatch_chrony_config_audit_success gauge
clockwatch_chrony_config_audit_success 0
# HELP clockwatch_chrony_poll_age_seconds Time since the last successful poll of chronyd; the chrony figures are this old.
# TYPE clockwatch_chrony_poll_age_seconds gauge
clockwatch_chrony_poll_age_seconds 5
# HELP clockwatch_chrony_poll_duration_seconds How long the last poll of chronyd took (tracking, sources and sourcestats).
# TYPE clockwatch_chrony_poll_duration_seconds gauge
clockwatch_chrony_poll_duration_seconds 0.0003
# HELP clockwatch_chrony_poll_failures_total Polls of chronyd that failed.
# TYPE clockwatch_chrony_poll_failures_total counter
clockwatch_chrony_poll_failures_total 3
# HELP clockwatch_chrony_polls_total Polls of chronyd since clockwatch started.
# TYPE clockwatch_chrony_polls_total counter
clockwatch_chrony_polls_total 12
# HELP clockwatch_chrony_up Whether the chrony probe could be read (1) or not (0).
# TYPE clockwatch_chrony_up gauge
clockwatch_chrony_up 0
`},
		{name: "up", snap: chronySnapshot(), want: `
# HELP clockwatch_chrony_clock_error_bound_seconds Largest error of the local clock that chronyd's figures allow: |system offset| + root dispersion + root delay / 2.
# TYPE clockwatch_chrony_clock_error_bound_seconds gauge
clockwatch_chrony_clock_error_bound_seconds 0.005
# HELP clockwatch_chrony_config_audit_success Whether chrony.conf (and what it includes) could be read and understood.
# TYPE clockwatch_chrony_config_audit_success gauge
clockwatch_chrony_config_audit_success 1
# HELP clockwatch_chrony_config_max_slew_rate_ratio Largest rate at which chronyd slews the clock (maxslewrate).
# TYPE clockwatch_chrony_config_max_slew_rate_ratio gauge
clockwatch_chrony_config_max_slew_rate_ratio 0.0005
# HELP clockwatch_chrony_config_runtime_step_allowed Whether chrony.conf lets chronyd step the clock at any time (makestep with a negative limit).
# TYPE clockwatch_chrony_config_runtime_step_allowed gauge
clockwatch_chrony_config_runtime_step_allowed 1
# HELP clockwatch_chrony_config_step_limit makestep limit: clock updates after start that may step; -1 means unlimited.
# TYPE clockwatch_chrony_config_step_limit gauge
clockwatch_chrony_config_step_limit -1
# HELP clockwatch_chrony_config_step_threshold_seconds makestep threshold: offsets above it are stepped, while steps are allowed.
# TYPE clockwatch_chrony_config_step_threshold_seconds gauge
clockwatch_chrony_config_step_threshold_seconds 1
# HELP clockwatch_chrony_connection_info How clockwatch reaches chronyd: transport unix (all commands) or udp (tracking and sources only), and the address.
# TYPE clockwatch_chrony_connection_info gauge
clockwatch_chrony_connection_info{address="/run/chrony/chronyd.sock",transport="unix"} 1
# HELP clockwatch_chrony_poll_age_seconds Time since the last successful poll of chronyd; the chrony figures are this old.
# TYPE clockwatch_chrony_poll_age_seconds gauge
clockwatch_chrony_poll_age_seconds 5
# HELP clockwatch_chrony_poll_duration_seconds How long the last poll of chronyd took (tracking, sources and sourcestats).
# TYPE clockwatch_chrony_poll_duration_seconds gauge
clockwatch_chrony_poll_duration_seconds 0.0003
# HELP clockwatch_chrony_poll_failures_total Polls of chronyd that failed.
# TYPE clockwatch_chrony_poll_failures_total counter
clockwatch_chrony_poll_failures_total 1
# HELP clockwatch_chrony_polls_total Polls of chronyd since clockwatch started.
# TYPE clockwatch_chrony_polls_total counter
clockwatch_chrony_polls_total 10
# HELP clockwatch_chrony_selectable_sources Sources chronyd may select now (state sync or candidate).
# TYPE clockwatch_chrony_selectable_sources gauge
clockwatch_chrony_selectable_sources 1
# HELP clockwatch_chrony_source_estimated_offset_error_seconds Error bound of the estimated offset.
# TYPE clockwatch_chrony_source_estimated_offset_error_seconds gauge
clockwatch_chrony_source_estimated_offset_error_seconds{source_address="127.0.0.11",source_name="ntp1.example"} 0.0004
# HELP clockwatch_chrony_source_estimated_offset_seconds Estimated offset of the source, local clock minus source.
# TYPE clockwatch_chrony_source_estimated_offset_seconds gauge
clockwatch_chrony_source_estimated_offset_seconds{source_address="127.0.0.11",source_name="ntp1.example"} 2e-05
# HELP clockwatch_chrony_source_info One series per source with its mode (client, peer, refclock) and state (sync, candidate, falseticker, jittery, outlier, unreach).
# TYPE clockwatch_chrony_source_info gauge
clockwatch_chrony_source_info{source_address="127.0.0.11",source_mode="client",source_name="ntp1.example",source_state="sync"} 1
clockwatch_chrony_source_info{source_address="127.0.0.12",source_mode="client",source_name="127.0.0.12",source_state="unreach"} 1
# HELP clockwatch_chrony_source_last_sample_age_seconds Time since the source's last sample, at the scrape (the poll's figure plus the time since the poll); absent when it never gave one.
# TYPE clockwatch_chrony_source_last_sample_age_seconds gauge
clockwatch_chrony_source_last_sample_age_seconds{source_address="127.0.0.11",source_name="ntp1.example"} 15
# HELP clockwatch_chrony_source_last_sample_error_seconds Margin of error of the last sample.
# TYPE clockwatch_chrony_source_last_sample_error_seconds gauge
clockwatch_chrony_source_last_sample_error_seconds{source_address="127.0.0.11",source_name="ntp1.example"} 0.0005
# HELP clockwatch_chrony_source_last_sample_offset_seconds Offset of the last sample, local clock minus source (positive: local ahead), adjusted for slews since.
# TYPE clockwatch_chrony_source_last_sample_offset_seconds gauge
clockwatch_chrony_source_last_sample_offset_seconds{source_address="127.0.0.11",source_name="ntp1.example"} 3e-05
# HELP clockwatch_chrony_source_poll_interval_seconds Interval at which chronyd polls the source.
# TYPE clockwatch_chrony_source_poll_interval_seconds gauge
clockwatch_chrony_source_poll_interval_seconds{source_address="127.0.0.11",source_name="ntp1.example"} 64
clockwatch_chrony_source_poll_interval_seconds{source_address="127.0.0.12",source_name="127.0.0.12"} 1
# HELP clockwatch_chrony_source_reach_register Reach register: one bit for each of the last 8 polls, set when it was answered (0-255).
# TYPE clockwatch_chrony_source_reach_register gauge
clockwatch_chrony_source_reach_register{source_address="127.0.0.11",source_name="ntp1.example"} 254
clockwatch_chrony_source_reach_register{source_address="127.0.0.12",source_name="127.0.0.12"} 0
# HELP clockwatch_chrony_source_reachability_ratio Share of the last 8 polls the source answered.
# TYPE clockwatch_chrony_source_reachability_ratio gauge
clockwatch_chrony_source_reachability_ratio{source_address="127.0.0.11",source_name="ntp1.example"} 0.875
clockwatch_chrony_source_reachability_ratio{source_address="127.0.0.12",source_name="127.0.0.12"} 0
# HELP clockwatch_chrony_source_residual_frequency_ratio Residual frequency of the source.
# TYPE clockwatch_chrony_source_residual_frequency_ratio gauge
clockwatch_chrony_source_residual_frequency_ratio{source_address="127.0.0.11",source_name="ntp1.example"} 1e-09
# HELP clockwatch_chrony_source_runs Runs of residuals with the same sign (sourcestats NR).
# TYPE clockwatch_chrony_source_runs gauge
clockwatch_chrony_source_runs{source_address="127.0.0.11",source_name="ntp1.example"} 5
# HELP clockwatch_chrony_source_samples Sample points chronyd keeps for the source (sourcestats NP).
# TYPE clockwatch_chrony_source_samples gauge
clockwatch_chrony_source_samples{source_address="127.0.0.11",source_name="ntp1.example"} 8
# HELP clockwatch_chrony_source_skew_ratio Error bound of the source's residual frequency.
# TYPE clockwatch_chrony_source_skew_ratio gauge
clockwatch_chrony_source_skew_ratio{source_address="127.0.0.11",source_name="ntp1.example"} 3e-08
# HELP clockwatch_chrony_source_span_seconds Time between the oldest and newest samples.
# TYPE clockwatch_chrony_source_span_seconds gauge
clockwatch_chrony_source_span_seconds{source_address="127.0.0.11",source_name="ntp1.example"} 448
# HELP clockwatch_chrony_source_std_dev_seconds Estimated sample standard deviation.
# TYPE clockwatch_chrony_source_std_dev_seconds gauge
clockwatch_chrony_source_std_dev_seconds{source_address="127.0.0.11",source_name="ntp1.example"} 1e-05
# HELP clockwatch_chrony_source_stratum Stratum of the source.
# TYPE clockwatch_chrony_source_stratum gauge
clockwatch_chrony_source_stratum{source_address="127.0.0.11",source_name="ntp1.example"} 1
clockwatch_chrony_source_stratum{source_address="127.0.0.12",source_name="127.0.0.12"} 0
# HELP clockwatch_chrony_tracking_frequency_ratio Rate at which the clock would be wrong without chronyd's correction (positive: fast).
# TYPE clockwatch_chrony_tracking_frequency_ratio gauge
clockwatch_chrony_tracking_frequency_ratio -3e-06
# HELP clockwatch_chrony_tracking_info chronyd's reference, as chronyc tracking shows it: reference ID in hex, name (address or refclock ID) and address.
# TYPE clockwatch_chrony_tracking_info gauge
clockwatch_chrony_tracking_info{ref_address="127.0.0.11",ref_id="7F00000B",ref_name="127.0.0.11"} 1
# HELP clockwatch_chrony_tracking_last_offset_seconds Offset of the local clock estimated at the last clock update (positive: ahead).
# TYPE clockwatch_chrony_tracking_last_offset_seconds gauge
clockwatch_chrony_tracking_last_offset_seconds 1e-05
# HELP clockwatch_chrony_tracking_leap_status chronyd's leap status: 0 normal, 1 insert second, 2 delete second, 3 not synchronised.
# TYPE clockwatch_chrony_tracking_leap_status gauge
clockwatch_chrony_tracking_leap_status 0
# HELP clockwatch_chrony_tracking_reference_timestamp_seconds When chronyd last updated the clock from its reference.
# TYPE clockwatch_chrony_tracking_reference_timestamp_seconds gauge
clockwatch_chrony_tracking_reference_timestamp_seconds 1.796011199e+09
# HELP clockwatch_chrony_tracking_residual_frequency_ratio Difference between the reference's measured frequency and the one in use.
# TYPE clockwatch_chrony_tracking_residual_frequency_ratio gauge
clockwatch_chrony_tracking_residual_frequency_ratio 1e-09
# HELP clockwatch_chrony_tracking_rms_offset_seconds Long-term average (RMS) of the offset.
# TYPE clockwatch_chrony_tracking_rms_offset_seconds gauge
clockwatch_chrony_tracking_rms_offset_seconds 2e-05
# HELP clockwatch_chrony_tracking_root_delay_seconds Total network path delay to the stratum-1 clock.
# TYPE clockwatch_chrony_tracking_root_delay_seconds gauge
clockwatch_chrony_tracking_root_delay_seconds 0.004
# HELP clockwatch_chrony_tracking_root_dispersion_seconds Total dispersion accumulated to the stratum-1 clock.
# TYPE clockwatch_chrony_tracking_root_dispersion_seconds gauge
clockwatch_chrony_tracking_root_dispersion_seconds 0.001
# HELP clockwatch_chrony_tracking_skew_ratio Estimated error bound of the frequency.
# TYPE clockwatch_chrony_tracking_skew_ratio gauge
clockwatch_chrony_tracking_skew_ratio 2e-08
# HELP clockwatch_chrony_tracking_stratum chronyd's stratum.
# TYPE clockwatch_chrony_tracking_stratum gauge
clockwatch_chrony_tracking_stratum 2
# HELP clockwatch_chrony_tracking_synchronized Whether chronyd is synchronised (leap status not 3).
# TYPE clockwatch_chrony_tracking_synchronized gauge
clockwatch_chrony_tracking_synchronized 1
# HELP clockwatch_chrony_tracking_system_time_offset_seconds Local clock minus true time as chronyd estimates it now (chronyc's System time; positive: the clock is ahead). chronyd slews it away.
# TYPE clockwatch_chrony_tracking_system_time_offset_seconds gauge
clockwatch_chrony_tracking_system_time_offset_seconds -0.002
# HELP clockwatch_chrony_tracking_update_interval_seconds Interval between the last two clock updates.
# TYPE clockwatch_chrony_tracking_update_interval_seconds gauge
clockwatch_chrony_tracking_update_interval_seconds 64
# HELP clockwatch_chrony_up Whether the chrony probe could be read (1) or not (0).
# TYPE clockwatch_chrony_up gauge
clockwatch_chrony_up 1
`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			p := NewChronyUpdater(fixedSnapshot(tc.snap))
			p.now = func() time.Time { return chronyTestStart.Add(5 * time.Second) }
			s := NewScraper(slog.New(slog.DiscardHandler), p)
			// Every chrony metric and up; the scrape machinery's own series
			// carry durations that change.
			var names []string
			for _, l := range strings.Split(tc.want, "\n") {
				if n, ok := strings.CutPrefix(l, "# TYPE "); ok {
					names = append(names, strings.Fields(n)[0])
				}
			}
			if err := testutil.CollectAndCompare(s, strings.NewReader(tc.want), append(names, chronyMetricNames()...)...); err != nil {
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

// chronyMetricNames lists every metric of the ChronyUpdater, so that
// CollectAndCompare also catches a metric that should be absent.
func chronyMetricNames() []string {
	return []string{MetricChronyPollAge, MetricChronyPollDuration, MetricChronyPolls, MetricChronyPollFailures, MetricChronyConnection,
		MetricChronyTrackingInfo, MetricChronyStratum, MetricChronyLeapStatus, MetricChronySynchronized, MetricChronySystemOffset,
		MetricChronyLastOffset, MetricChronyRMSOffset, MetricChronyFrequency, MetricChronyResidualFrequency, MetricChronySkew,
		MetricChronyRootDelay, MetricChronyRootDispersion, MetricChronyUpdateInterval, MetricChronyReferenceTimestamp,
		MetricChronyErrorBound, MetricChronySelectableSources, MetricChronySourceInfo, MetricChronySourceStratum,
		MetricChronySourcePollInterval, MetricChronySourceReachRegister, MetricChronySourceReachability,
		MetricChronySourceLastSampleAge, MetricChronySourceLastSampleOffset, MetricChronySourceLastSampleError,
		MetricChronySourceSamples, MetricChronySourceRuns, MetricChronySourceSpan, MetricChronySourceStdDev,
		MetricChronySourceEstimatedOffset, MetricChronySourceEstimatedOffErr, MetricChronySourceResidualFrequency,
		MetricChronySourceSkew, MetricChronyConfigAuditSuccess, MetricChronyConfigRuntimeStep, MetricChronyConfigStepThresh,
		MetricChronyConfigStepLimit, MetricChronyConfigMaxSlewRate, "clockwatch_chrony_up"}
}

// switchingSnapshot gives whatever snapshot it holds now.
type switchingSnapshot struct{ s chrony.Snapshot }

func (f *switchingSnapshot) Snapshot() chrony.Snapshot { return f.s }

// TestChronyUpdaterLabelsFollowChanges checks that the label pairs the updater
// keeps between scrapes follow the sources, their states and the reference:
// after each change a scrape must equal a fresh updater's.
func TestChronyUpdaterLabelsFollowChanges(t *testing.T) {
	t.Parallel()
	first := chronySnapshot()
	second := chronySnapshot()
	second.Data.Sources = []chrony.Source{second.Data.Sources[1], second.Data.Sources[0]}
	second.Data.Sources[0].State = "candidate"
	second.Data.Sources[1].Address, second.Data.Sources[1].Name = "127.0.0.13", "ntp3.example"
	second.Data.Tracking.RefID, second.Data.Tracking.RefName, second.Data.Tracking.Address = 0x7F00000C, "127.0.0.12", "127.0.0.12"
	second.Transport, second.Address = chrony.TransportUDP, "127.0.0.1:323"
	third := chronySnapshot()
	third.Data.Sources = third.Data.Sources[:1]

	now := func() time.Time { return chronyTestStart.Add(5 * time.Second) }
	src := &switchingSnapshot{}
	kept := NewChronyUpdater(src)
	kept.now = now
	quiet := slog.New(slog.DiscardHandler)
	for i, snap := range []chrony.Snapshot{first, second, third, first} {
		src.s = snap
		got, err := testutil.CollectAndFormat(NewScraper(quiet, kept), expfmt.TypeTextPlain, chronyMetricNames()...)
		if err != nil {
			t.Fatal(err)
		}
		fresh := NewChronyUpdater(fixedSnapshot(snap))
		fresh.now = now
		want, err := testutil.CollectAndFormat(NewScraper(quiet, fresh), expfmt.TypeTextPlain, chronyMetricNames()...)
		if err != nil {
			t.Fatal(err)
		}
		if diff := cmp.Diff(string(want), string(got)); diff != "" {
			t.Errorf("scrape %d: (-want +got):\n%s", i, diff)
		}
		if got, want := len(kept.sources), len(snap.Data.Sources); got != want {
			t.Errorf("scrape %d: label pairs kept for %d sources, want %d (those of the last scrape)", i, got, want)
		}
	}
}

// noDetails is a snapshot source with chrony.source_details off.
type noDetails struct{ fixedSnapshot }

func (noDetails) SourceDetails() bool { return false }

// TestChronyUpdaterSourceDetails: without chrony.source_details a source has
// the eight series dashboards and alerts use, and none of the others.
func TestChronyUpdaterSourceDetails(t *testing.T) {
	t.Parallel()
	count := func(src ChronySnapshotter) map[string]int {
		t.Helper()
		reg := prometheus.NewPedanticRegistry()
		reg.MustRegister(NewScraper(quiet, NewChronyUpdater(src)))
		mfs, err := reg.Gather()
		if err != nil {
			t.Fatal(err)
		}
		m := map[string]int{}
		for _, mf := range mfs {
			if strings.HasPrefix(mf.GetName(), "clockwatch_chrony_source_") {
				m[mf.GetName()] = len(mf.GetMetric())
			}
		}
		return m
	}
	snap := chronySnapshot()
	all, some := count(fixedSnapshot(snap)), count(noDetails{fixedSnapshot(snap)})
	want := []string{MetricChronySourceInfo, MetricChronySourceStratum, MetricChronySourcePollInterval,
		MetricChronySourceReachability, MetricChronySourceLastSampleAge, MetricChronySourceLastSampleOffset,
		MetricChronySourceLastSampleError, MetricChronySourceEstimatedOffset}
	if len(all) != chronyMetricsPerSource {
		t.Errorf("with details: %d per-source families, want %d", len(all), chronyMetricsPerSource)
	}
	if len(some) != len(want) {
		t.Errorf("without details: families %v, want %v", some, want)
	}
	for _, name := range want {
		if some[name] != all[name] || some[name] == 0 {
			t.Errorf("without details: %d series of %s, want %d as with details", some[name], name, all[name])
		}
	}
}
