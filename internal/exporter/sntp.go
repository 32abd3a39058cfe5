package exporter

import (
	"time"

	"github.com/clockwatch/clockwatch/internal/probe/sntp"
	"github.com/prometheus/client_golang/prometheus"
)

// Metric names of the independent NTP probes, one series per configured
// server.
const (
	MetricNTPProbeUp               = "clockwatch_ntp_probe_up"
	MetricNTPProbeOffset           = "clockwatch_ntp_probe_offset_seconds"
	MetricNTPProbeRTT              = "clockwatch_ntp_probe_rtt_seconds"
	MetricNTPProbeStratum          = "clockwatch_ntp_probe_stratum"
	MetricNTPProbeLeap             = "clockwatch_ntp_probe_leap"
	MetricNTPProbeRootDelay        = "clockwatch_ntp_probe_root_delay_seconds"
	MetricNTPProbeRootDispersion   = "clockwatch_ntp_probe_root_dispersion_seconds"
	MetricNTPProbeRootDistance     = "clockwatch_ntp_probe_root_distance_seconds"
	MetricNTPProbeSampleAge        = "clockwatch_ntp_probe_sample_age_seconds"
	MetricNTPProbeQueries          = "clockwatch_ntp_probe_queries_total"
	MetricNTPProbeQueryErrors      = "clockwatch_ntp_probe_query_errors_total"
	MetricNTPProbeValidateFailures = "clockwatch_ntp_probe_validate_failures_total"
	MetricNTPProbeKissCodes        = "clockwatch_ntp_probe_kiss_codes_total"
)

// NTPProbeResults gives the NTP prober's last results; *sntp.Prober fits.
type NTPProbeResults interface {
	Results() []sntp.Result
}

var _ NTPProbeResults = (*sntp.Prober)(nil)

// NTPProbeCollector exports the last result of clockwatch's own NTP queries.
// It is a plain prometheus.Collector, not an Updater: its up is per server.
type NTPProbeCollector struct {
	src NTPProbeResults
	now func() time.Time

	up, offset, rtt, stratum, leap, rootDelay, rootDisp, rootDist, age,
	queries, queryErrs, validateFails, kiss *prometheus.Desc
}

var _ prometheus.Collector = (*NTPProbeCollector)(nil)

// NewNTPProbeCollector exports what src keeps.
func NewNTPProbeCollector(src NTPProbeResults) *NTPProbeCollector {
	d := func(name, help string, labels ...string) *prometheus.Desc {
		return prometheus.NewDesc(name, help, append([]string{"server"}, labels...), nil)
	}
	return &NTPProbeCollector{
		src:           src,
		now:           time.Now,
		up:            d(MetricNTPProbeUp, "Whether the last round of queries to the server got a valid answer."),
		offset:        d(MetricNTPProbeOffset, "Local clock minus the server's clock (positive: local ahead), from the sample with the smallest round trip of the last good round."),
		rtt:           d(MetricNTPProbeRTT, "Round trip of that sample."),
		stratum:       d(MetricNTPProbeStratum, "Stratum the server reported."),
		leap:          d(MetricNTPProbeLeap, "Leap indicator the server reported: 0 none, 1 insert, 2 delete, 3 not synchronised."),
		rootDelay:     d(MetricNTPProbeRootDelay, "Root delay the server reported."),
		rootDisp:      d(MetricNTPProbeRootDispersion, "Root dispersion the server reported."),
		rootDist:      d(MetricNTPProbeRootDistance, "Root distance of the sample: the server's root dispersion + root delay/2, with this query's share."),
		age:           d(MetricNTPProbeSampleAge, "Time since that sample was taken."),
		queries:       d(MetricNTPProbeQueries, "NTP queries sent to the server."),
		queryErrs:     d(MetricNTPProbeQueryErrors, "Queries that got no answer (timeout, unreachable, name not resolved)."),
		validateFails: d(MetricNTPProbeValidateFailures, "Answers rejected as unusable (kiss-o'-death, unsynchronised, stale, invalid fields)."),
		kiss:          d(MetricNTPProbeKissCodes, "Kiss-o'-death answers by code (RATE: query less often; DENY, RSTR: access refused).", "code"),
	}
}

// Describe implements prometheus.Collector.
func (c *NTPProbeCollector) Describe(ch chan<- *prometheus.Desc) {
	for _, d := range []*prometheus.Desc{c.up, c.offset, c.rtt, c.stratum, c.leap, c.rootDelay, c.rootDisp,
		c.rootDist, c.age, c.queries, c.queryErrs, c.validateFails, c.kiss} {
		ch <- d
	}
}

// Collect implements prometheus.Collector. A server that was never
// answered validly has only up, its counters and kiss codes.
func (c *NTPProbeCollector) Collect(ch chan<- prometheus.Metric) {
	now := c.now()
	for _, r := range c.src.Results() {
		s := r.Server
		gauge := func(d *prometheus.Desc, v float64) {
			ch <- prometheus.MustNewConstMetric(d, prometheus.GaugeValue, v, s)
		}
		counter := func(d *prometheus.Desc, v uint64, labels ...string) {
			ch <- prometheus.MustNewConstMetric(d, prometheus.CounterValue, float64(v), append([]string{s}, labels...)...)
		}
		gauge(c.up, boolFloat(r.OK))
		counter(c.queries, r.Queries)
		counter(c.queryErrs, r.QueryErrors)
		counter(c.validateFails, r.ValidateFailures)
		for code, n := range r.KissCodes {
			counter(c.kiss, n, code)
		}
		if r.LastGood.IsZero() {
			continue
		}
		b := r.Best
		gauge(c.offset, b.Offset)
		gauge(c.rtt, b.RTT.Seconds())
		gauge(c.stratum, float64(b.Stratum))
		gauge(c.leap, float64(b.Leap))
		gauge(c.rootDelay, b.RootDelay.Seconds())
		gauge(c.rootDisp, b.RootDispersion.Seconds())
		gauge(c.rootDist, b.RootDistance.Seconds())
		gauge(c.age, now.Sub(r.LastGood).Seconds())
	}
}
