package exporter

import (
	"slices"
	"strings"

	"github.com/prometheus/client_golang/prometheus"
	dto "github.com/prometheus/client_model/go"
)

// DetailPrefixes begin the names of the per-source families that
// metrics.detail: false leaves out: one series per chrony source and per
// ntpd association, most of a scrape on a host with many sources. The alert
// rules use none of them (nor a histogram's buckets, also left out); the
// dashboard's "chrony sources", "NTP peers" and ack latency quantile panels
// and the chrony_exporter migration rules' source series do
// (docs/metrics.md, "Leaving the detail out").
// The collectors' scrape durations go too (their success stays).
var DetailPrefixes = []string{"clockwatch_chrony_source_", "clockwatch_ntpd_peer_", MetricCollectorDuration}

// RuntimeDetail names the Go runtime's families that metrics.detail: false
// leaves out: the allocator's breakdown of the memory it holds from the
// system (its span, cache and bucket tables, the idle and released heap),
// what one reads to debug the runtime, not to watch the daemon. The
// headline figures stay: go_memstats_sys_bytes (all it holds), the heap's
// alloc, inuse and objects, next_gc, the allocation counters, and
// process_resident_memory_bytes beside them.
var RuntimeDetail = []string{
	"go_memstats_buck_hash_sys_bytes", "go_memstats_gc_sys_bytes", "go_memstats_heap_idle_bytes",
	"go_memstats_heap_released_bytes", "go_memstats_heap_sys_bytes", "go_memstats_mcache_inuse_bytes",
	"go_memstats_mcache_sys_bytes", "go_memstats_mspan_inuse_bytes", "go_memstats_mspan_sys_bytes",
	"go_memstats_other_sys_bytes", "go_memstats_stack_sys_bytes",
}

// IsDetail reports whether metrics.detail: false leaves the family out.
func IsDetail(family string) bool {
	for _, p := range DetailPrefixes {
		if strings.HasPrefix(family, p) {
			return true
		}
	}
	return slices.Contains(RuntimeDetail, family)
}

// DetailGatherer returns g's families as they are while detail() is true.
// While it is false, it leaves out the per-source families (IsDetail),
// every family's HELP text, which is a third of a scrape's bytes and which
// Prometheus keeps only as metadata, and the histograms' buckets but +Inf
// and the summaries' quantiles (their _sum and _count stay, so means and
// rates are still there): the
// other families' names, types and series are the same. detail is read at every gather, so that a reload applies
// at the next scrape. g's families are not changed: they may be cached and
// shared with other gathers.
func DetailGatherer(g prometheus.Gatherer, detail func() bool) prometheus.Gatherer {
	return detailGatherer{g: g, detail: detail}
}

type detailGatherer struct {
	g      prometheus.Gatherer
	detail func() bool
}

// Gather implements prometheus.Gatherer.
func (d detailGatherer) Gather() ([]*dto.MetricFamily, error) {
	mfs, err := d.g.Gather()
	if d.detail() {
		return mfs, err
	}
	out := make([]*dto.MetricFamily, 0, len(mfs))
	for _, mf := range mfs {
		if IsDetail(mf.GetName()) {
			continue
		}
		ms := mf.Metric
		switch mf.GetType() {
		case dto.MetricType_HISTOGRAM:
			ms = withoutBuckets(ms)
		case dto.MetricType_SUMMARY:
			ms = withoutQuantiles(ms)
		}
		out = append(out, &dto.MetricFamily{Name: mf.Name, Type: mf.Type, Unit: mf.Unit, Metric: ms})
	}
	return out, err
}

// withoutQuantiles returns copies of a summary's series (the Go runtime's
// go_gc_duration_seconds) with only the sum and count.
func withoutQuantiles(ms []*dto.Metric) []*dto.Metric {
	out := make([]*dto.Metric, len(ms))
	for i, m := range ms {
		s := m.GetSummary()
		out[i] = &dto.Metric{Label: m.Label, TimestampMs: m.TimestampMs,
			Summary: &dto.Summary{SampleCount: s.SampleCount, SampleSum: s.SampleSum}}
	}
	return out
}

// withoutBuckets returns copies of a histogram's series with only the sum
// and count (the text format still writes the +Inf bucket, the count).
func withoutBuckets(ms []*dto.Metric) []*dto.Metric {
	out := make([]*dto.Metric, len(ms))
	for i, m := range ms {
		h := m.GetHistogram()
		out[i] = &dto.Metric{Label: m.Label, TimestampMs: m.TimestampMs,
			Histogram: &dto.Histogram{SampleCount: h.SampleCount, SampleCountFloat: h.SampleCountFloat, SampleSum: h.SampleSum}}
	}
	return out
}
