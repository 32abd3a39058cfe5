package exporter

import (
	"slices"
	"strings"

	"github.com/prometheus/client_golang/prometheus"
	dto "github.com/prometheus/client_model/go"
)

// constMetric is a gauge or counter whose label pairs are built once and
// shared by every scrape, in place of prometheus.MustNewConstMetric, which
// builds them again for each metric of each scrape (about ten allocations
// for two labels). The label pairs must never be modified once built.
type constMetric struct {
	desc   *prometheus.Desc
	typ    prometheus.ValueType
	v      float64
	labels []*dto.LabelPair
	gauge  dto.Gauge // Write points the output at it: no allocation
}

var _ prometheus.Metric = (*constMetric)(nil)

// Desc implements prometheus.Metric.
func (m *constMetric) Desc() *prometheus.Desc { return m.desc }

// Write implements prometheus.Metric.
func (m *constMetric) Write(out *dto.Metric) error {
	out.Label = m.labels
	if m.typ == prometheus.CounterValue {
		out.Counter = &dto.Counter{Value: &m.v}
		return nil
	}
	m.gauge.Value = &m.v
	out.Gauge = &m.gauge
	return nil
}

// metricBatch hands out the metrics of one scrape from one allocation. The
// metrics stay valid after the scrape; a batch is never reused.
type metricBatch struct {
	ms []constMetric
}

func newMetricBatch(n int) *metricBatch { return &metricBatch{ms: make([]constMetric, 0, n)} }

// next returns a metric with the given fields, from the batch while it
// has room.
func (b *metricBatch) next(d *prometheus.Desc, typ prometheus.ValueType, v float64, labels []*dto.LabelPair) *constMetric {
	if len(b.ms) == cap(b.ms) {
		return &constMetric{desc: d, typ: typ, v: v, labels: labels}
	}
	b.ms = b.ms[:len(b.ms)+1]
	m := &b.ms[len(b.ms)-1]
	m.desc, m.typ, m.v, m.labels = d, typ, v, labels
	return m
}

// labelPairs builds the label pairs of names and values, sorted by name as
// the registry expects.
func labelPairs(names []string, values ...string) []*dto.LabelPair {
	ps := make([]*dto.LabelPair, len(names))
	for i := range names {
		n, v := names[i], values[i]
		ps[i] = &dto.LabelPair{Name: &n, Value: &v}
	}
	slices.SortFunc(ps, func(a, b *dto.LabelPair) int { return strings.Compare(a.GetName(), b.GetName()) })
	return ps
}
