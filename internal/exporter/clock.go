package exporter

import (
	"sync"
	"time"

	"github.com/clockwatch/clockwatch/internal/hostclock"
	"github.com/clockwatch/clockwatch/internal/kernel"
	"github.com/prometheus/client_golang/prometheus"
)

// Metric names of the ClockUpdater.
const (
	MetricRealtime            = "clockwatch_clock_realtime_seconds"
	MetricWallBootGap         = "clockwatch_clock_wall_boot_gap_seconds"
	MetricSuspended           = "clockwatch_clock_suspended_seconds"
	MetricFrequencyCorrection = "clockwatch_clock_frequency_correction_ratio"
	MetricTAIOffset           = "clockwatch_clock_tai_offset_seconds"
	MetricSampleUncertainty   = "clockwatch_clock_sample_uncertainty_seconds"
)

// ClockUpdater samples the kernel clocks at scrape time.
type ClockUpdater struct {
	clocks hostclock.ClockReader

	realtime, gap, suspended, freq, tai, uncertainty *prometheus.Desc

	mu   sync.Mutex
	prev kernel.Sample // the previous scrape's sample, for the rate of MONOTONIC vs RAW
}

var _ Updater = (*ClockUpdater)(nil)

// NewClockUpdater takes a first sample so that the first scrape can already
// report the frequency correction.
func NewClockUpdater(clocks hostclock.ClockReader) *ClockUpdater {
	p := &ClockUpdater{
		clocks: clocks,
		realtime: prometheus.NewDesc(MetricRealtime,
			"CLOCK_REALTIME when sampled; compare with the scrape's timestamp() to see this clock's offset from Prometheus's.", nil, nil),
		gap: prometheus.NewDesc(MetricWallBootGap,
			"CLOCK_REALTIME minus CLOCK_BOOTTIME: moves only when the wall clock is stepped or slewed, not on suspend.", nil, nil),
		suspended: prometheus.NewDesc(MetricSuspended,
			"CLOCK_BOOTTIME minus CLOCK_MONOTONIC: time spent suspended since boot.", nil, nil),
		freq: prometheus.NewDesc(MetricFrequencyCorrection,
			"Rate of CLOCK_MONOTONIC against CLOCK_MONOTONIC_RAW since the previous scrape, minus one: the frequency correction applied to the hardware clock.", nil, nil),
		tai: prometheus.NewDesc(MetricTAIOffset,
			"CLOCK_TAI minus CLOCK_REALTIME, to the second: the TAI offset the kernel applies.", nil, nil),
		uncertainty: prometheus.NewDesc(MetricSampleUncertainty,
			"How long reading all the clocks took: the uncertainty of every difference between them.", nil, nil),
	}
	_ = clocks.ReadClocks(&p.prev) // a failure leaves prev zero: no rate on the first scrape
	return p
}

// Name implements Updater.
func (p *ClockUpdater) Name() string { return "clock" }

// Describe implements Updater.
func (p *ClockUpdater) Describe(ch chan<- *prometheus.Desc) {
	for _, d := range []*prometheus.Desc{p.realtime, p.gap, p.suspended, p.freq, p.tai, p.uncertainty} {
		ch <- d
	}
}

// Update implements Updater.
func (p *ClockUpdater) Update(ch chan<- prometheus.Metric) error {
	var s kernel.Sample
	if err := p.clocks.ReadClocks(&s); err != nil {
		return err
	}
	p.mu.Lock()
	ratio, ok := kernel.FrequencyCorrection(p.prev, s)
	if ok || p.prev.Raw == 0 {
		p.prev = s
	}
	p.mu.Unlock()

	b := newMetricBatch(6)
	gauge := func(d *prometheus.Desc, v float64) { ch <- b.next(d, prometheus.GaugeValue, v, nil) }
	gauge(p.realtime, float64(s.Real)/1e9)
	gauge(p.gap, s.WallBootGap().Seconds())
	gauge(p.suspended, s.Suspended().Seconds())
	if ok {
		gauge(p.freq, ratio)
	}
	if s.TAI != 0 {
		gauge(p.tai, s.TAIOffset().Seconds())
	}
	gauge(p.uncertainty, time.Duration(s.Window).Seconds())
	return nil
}
