package exporter

import (
	"sync"
	"time"

	"github.com/clockwatch/clockwatch/internal/probe/timesyncd"
	"github.com/prometheus/client_golang/prometheus"
	dto "github.com/prometheus/client_model/go"
)

// Metric names of the timesyncd source, shaped like the ntpd ones where the
// meaning is the same.
const (
	MetricTimesyncdUp             = "clockwatch_timesyncd_up"
	MetricTimesyncdFound          = "clockwatch_timesyncd_found"
	MetricTimesyncdPolls          = "clockwatch_timesyncd_polls_total"
	MetricTimesyncdPollFailures   = "clockwatch_timesyncd_poll_failures_total"
	MetricTimesyncdPollAge        = "clockwatch_timesyncd_poll_age_seconds"
	MetricTimesyncdInfo           = "clockwatch_timesyncd_server_info"
	MetricTimesyncdPollInterval   = "clockwatch_timesyncd_poll_interval_seconds"
	MetricTimesyncdFrequency      = "clockwatch_timesyncd_frequency_ratio"
	MetricTimesyncdSynchronized   = "clockwatch_timesyncd_synchronized"
	MetricTimesyncdLeapStatus     = "clockwatch_timesyncd_leap_status"
	MetricTimesyncdStratum        = "clockwatch_timesyncd_stratum"
	MetricTimesyncdOffset         = "clockwatch_timesyncd_offset_seconds"
	MetricTimesyncdSampleOffset   = "clockwatch_timesyncd_sample_offset_seconds"
	MetricTimesyncdSampleDelay    = "clockwatch_timesyncd_sample_delay_seconds"
	MetricTimesyncdSampleAge      = "clockwatch_timesyncd_sample_age_seconds"
	MetricTimesyncdSampleSpike    = "clockwatch_timesyncd_sample_spike"
	MetricTimesyncdRootDelay      = "clockwatch_timesyncd_root_delay_seconds"
	MetricTimesyncdRootDispersion = "clockwatch_timesyncd_root_dispersion_seconds"
	MetricTimesyncdPrecision      = "clockwatch_timesyncd_precision_seconds"
	MetricTimesyncdJitter         = "clockwatch_timesyncd_jitter_seconds"
	MetricTimesyncdPackets        = "clockwatch_timesyncd_packets_total"
	MetricTimesyncdErrorBound     = "clockwatch_timesyncd_clock_error_bound_seconds"
)

// TimesyncdSnapshotter gives the timesyncd poller's last result;
// *timesyncd.Poller fits.
type TimesyncdSnapshotter = Snapshotter[timesyncd.Snapshot]

var _ TimesyncdSnapshotter = (*timesyncd.Poller)(nil)

// TimesyncdCollector exports the timesyncd poller's last snapshot. It is a
// collector of its own, not a Scraper updater, so that an absent timesyncd
// shows as up 0 and found 0 and nothing else: an updater's failure would also
// set clockwatch_scrape_collector_success to 0, which alerts.
type TimesyncdCollector struct {
	src TimesyncdSnapshotter
	now func() time.Time

	up, found, polls, failures, pollAge, info, pollInterval, freq, synced, leap, stratum, offset,
	sampleOffset, sampleDelay, sampleAge, spike, rootDelay, rootDisp, precision, jitter, packets, errorBound *prometheus.Desc

	// The info series' label pairs, rebuilt when the server changes.
	mu      sync.Mutex
	infoKey [3]string
	infoLs  []*dto.LabelPair
}

var _ prometheus.Collector = (*TimesyncdCollector)(nil)

// timesyncdMetrics is the most metrics one collect sends.
const timesyncdMetrics = 22

// NewTimesyncdCollector exports what src keeps.
func NewTimesyncdCollector(src TimesyncdSnapshotter) *TimesyncdCollector {
	return &TimesyncdCollector{
		src:          src,
		now:          time.Now,
		up:           desc(MetricTimesyncdUp, "Whether the last read of systemd-timesyncd over D-Bus succeeded (1) or not (0)."),
		found:        desc(MetricTimesyncdFound, "Whether systemd-timesyncd has been on the system bus since clockwatch started (or is pinned with mode on)."),
		polls:        desc(MetricTimesyncdPolls, "Reads of systemd-timesyncd since clockwatch started."),
		failures:     desc(MetricTimesyncdPollFailures, "Reads that failed while timesyncd was found or pinned."),
		pollAge:      desc(MetricTimesyncdPollAge, "Time since the last successful read."),
		info:         desc(MetricTimesyncdInfo, "Always 1: the server timesyncd uses and its reference ID.", "server_name", "server_address", "ref_id"),
		pollInterval: desc(MetricTimesyncdPollInterval, "timesyncd's current interval between NTP requests."),
		freq:         desc(MetricTimesyncdFrequency, "Frequency correction timesyncd last set in the kernel."),
		synced:       desc(MetricTimesyncdSynchronized, "Whether timesyncd's last reply is fresh (at most 2 poll intervals + 15 s old) and from a synchronised server."),
		leap:         desc(MetricTimesyncdLeapStatus, "Leap indicator of the last reply: 0 normal, 1 insert second, 2 delete second, 3 not synchronised."),
		stratum:      desc(MetricTimesyncdStratum, "Stratum of timesyncd's server."),
		offset:       desc(MetricTimesyncdOffset, "Local clock minus true time now as timesyncd's figures say (positive: ahead): the last sample's offset, or 0 after timesyncd stepped the clock by it."),
		sampleOffset: desc(MetricTimesyncdSampleOffset, "Local clock minus the server's in the last NTP exchange, ((T2-T1)+(T3-T4))/2 negated."),
		sampleDelay:  desc(MetricTimesyncdSampleDelay, "Round trip of the last NTP exchange."),
		sampleAge:    desc(MetricTimesyncdSampleAge, "Time since timesyncd received its last reply."),
		spike:        desc(MetricTimesyncdSampleSpike, "Whether timesyncd ignored the last reply as a spike."),
		rootDelay:    desc(MetricTimesyncdRootDelay, "Root delay of the server, from its last reply."),
		rootDisp:     desc(MetricTimesyncdRootDispersion, "Root dispersion of the server, from its last reply."),
		precision:    desc(MetricTimesyncdPrecision, "Precision of the server's clock."),
		jitter:       desc(MetricTimesyncdJitter, "timesyncd's jitter: the RMS of its last samples' offsets."),
		packets:      desc(MetricTimesyncdPackets, "Replies timesyncd accepted since it started."),
		errorBound:   desc(MetricTimesyncdErrorBound, "Largest error of the local clock timesyncd's figures allow: abs(offset) + delay/2 + root delay/2 + root dispersion + precision + 15 ppm x sample age."),
	}
}

// Describe implements prometheus.Collector.
func (c *TimesyncdCollector) Describe(ch chan<- *prometheus.Desc) {
	for _, d := range []*prometheus.Desc{c.up, c.found, c.polls, c.failures, c.pollAge, c.info, c.pollInterval,
		c.freq, c.synced, c.leap, c.stratum, c.offset, c.sampleOffset, c.sampleDelay, c.sampleAge, c.spike,
		c.rootDelay, c.rootDisp, c.precision, c.jitter, c.packets, c.errorBound} {
		ch <- d
	}
}

// Collect implements prometheus.Collector. Until timesyncd is found only up,
// found and the poll counters exist; its figures only while it answers.
func (c *TimesyncdCollector) Collect(ch chan<- prometheus.Metric) {
	s := c.src.Snapshot()
	now := c.now()
	b := newMetricBatch(timesyncdMetrics)
	gauge := func(d *prometheus.Desc, v float64) { ch <- b.next(d, prometheus.GaugeValue, v, nil) }
	counter := func(d *prometheus.Desc, v float64) { ch <- b.next(d, prometheus.CounterValue, v, nil) }
	gauge(c.up, boolFloat(s.Up))
	gauge(c.found, boolFloat(s.Found))
	counter(c.polls, float64(s.Polls))
	counter(c.failures, float64(s.Failures))
	if !s.LastSuccess.IsZero() {
		gauge(c.pollAge, now.Sub(s.LastSuccess).Seconds())
	}
	if !s.Up {
		return
	}
	p := s.Props
	m := p.Message
	ch <- b.next(c.info, prometheus.GaugeValue, 1, c.infoLabels(p, m))
	gauge(c.pollInterval, p.PollInterval.Seconds())
	gauge(c.freq, p.Frequency)
	gauge(c.synced, boolFloat(s.Synchronized(now)))
	if !s.HaveData {
		return
	}
	gauge(c.leap, float64(m.Leap))
	gauge(c.stratum, float64(m.Stratum))
	gauge(c.offset, m.CurrentOffset().Seconds())
	gauge(c.sampleOffset, m.Offset().Seconds())
	gauge(c.sampleDelay, m.Delay().Seconds())
	gauge(c.sampleAge, s.SampleAge(now).Seconds())
	gauge(c.spike, boolFloat(m.Spike))
	gauge(c.rootDelay, m.RootDelay.Seconds())
	gauge(c.rootDisp, m.RootDispersion.Seconds())
	gauge(c.precision, m.PrecisionDuration().Seconds())
	gauge(c.jitter, m.Jitter.Seconds())
	counter(c.packets, float64(m.PacketCount))
	gauge(c.errorBound, s.ErrorBound(now).Seconds())
}

func (c *TimesyncdCollector) infoLabels(p timesyncd.Properties, m timesyncd.NTPMessage) []*dto.LabelPair {
	addr, ref := "", ""
	if p.ServerAddress.IsValid() {
		addr = p.ServerAddress.String()
	}
	if m.Valid() {
		ref = m.RefIDString()
	}
	k := [3]string{p.ServerName, addr, ref}
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.infoLs == nil || k != c.infoKey {
		c.infoKey, c.infoLs = k, labelPairs([]string{"server_name", "server_address", "ref_id"}, k[0], k[1], k[2])
	}
	return c.infoLs
}
