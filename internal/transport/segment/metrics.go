package segment

import (
	"github.com/prometheus/client_golang/prometheus"

	"github.com/clockwatch/clockwatch/stepdown/boundedtime"
)

// Metric names, shared with the tests and docs/metrics.md.
const (
	MetricBound     = "clockwatch_clockbound_bound_seconds"
	MetricStatus    = "clockwatch_clockbound_status"
	MetricLastWrite = "clockwatch_clockbound_last_write_timestamp_seconds"
	MetricWrites    = "clockwatch_clockbound_writes_total"
	MetricMaxDrift  = "clockwatch_clockbound_max_drift_ratio"
	MetricRecreated = "clockwatch_clockbound_segment_recreations_total"
)

var allStatuses = []boundedtime.Status{boundedtime.StatusUnknown, boundedtime.StatusSynchronized,
	boundedtime.StatusFreeRunning, boundedtime.StatusDisrupted}

type metrics struct {
	p                                       *Publisher
	bound, status, lastWrite, writes, drift *prometheus.Desc
	recreated                               *prometheus.Desc
}

func newMetrics(p *Publisher) *metrics {
	return &metrics{
		p: p,
		bound: prometheus.NewDesc(MetricBound,
			"Error bound written to the clockbound segment at its last write (readers grow it by the max drift since).", nil, nil),
		status: prometheus.NewDesc(MetricStatus,
			"Clock status written to the clockbound segment: 1 for the current one, 0 for the others.", []string{"status"}, nil),
		lastWrite: prometheus.NewDesc(MetricLastWrite, "When the clockbound segment was last written.", nil, nil),
		writes:    prometheus.NewDesc(MetricWrites, "Writes of the clockbound segment.", nil, nil),
		drift: prometheus.NewDesc(MetricMaxDrift,
			"Maximum drift the bound grows by between time-source updates (clockbound.max_drift_ppb / 1e9).", nil, nil),
		recreated: prometheus.NewDesc(MetricRecreated,
			"Times the clockbound segment was found truncated, removed or replaced under clockwatch and written anew.", nil, nil),
	}
}

// Collector returns the publisher's metrics.
func (p *Publisher) Collector() prometheus.Collector { return p.met }

func (m *metrics) Describe(ch chan<- *prometheus.Desc) {
	ch <- m.bound
	ch <- m.status
	ch <- m.lastWrite
	ch <- m.writes
	ch <- m.drift
	ch <- m.recreated
}

func (m *metrics) Collect(ch chan<- prometheus.Metric) {
	w := m.p.Last()
	ch <- prometheus.MustNewConstMetric(m.bound, prometheus.GaugeValue, w.Record.Bound.Seconds())
	for _, s := range allStatuses {
		v := 0.0
		if w.Writes > 0 && w.Record.Status == s {
			v = 1
		}
		ch <- prometheus.MustNewConstMetric(m.status, prometheus.GaugeValue, v, s.String())
	}
	last := 0.0
	if !w.At.IsZero() {
		last = float64(w.At.UnixNano()) / 1e9
	}
	ch <- prometheus.MustNewConstMetric(m.lastWrite, prometheus.GaugeValue, last)
	ch <- prometheus.MustNewConstMetric(m.writes, prometheus.CounterValue, float64(w.Writes))
	ch <- prometheus.MustNewConstMetric(m.drift, prometheus.GaugeValue, float64(m.p.cfg.MaxDriftPPB)/1e9)
	ch <- prometheus.MustNewConstMetric(m.recreated, prometheus.CounterValue, float64(w.Recreated))
}
