package step

import (
	"sync"
	"time"

	"github.com/prometheus/client_golang/prometheus"
)

// Metric names exported by the Collector.
const (
	MetricStepsTotal         = "clockwatch_clock_steps_total"
	MetricLastStepSeconds    = "clockwatch_clock_last_step_seconds"
	MetricLastStepTimestamp  = "clockwatch_clock_last_step_timestamp_seconds"
	MetricLargestStepSeconds = "clockwatch_clock_largest_step_seconds"
	MetricEpoch              = "clockwatch_clock_epoch"
	MetricDetectionDelay     = "clockwatch_clock_step_detection_delay_seconds"
	MetricSlewRate           = "clockwatch_clock_slew_rate_ratio"
	MetricClockSetsTotal     = "clockwatch_clock_set_events_total"
	MetricResumesTotal       = "clockwatch_clock_resumes_total"
	MetricSamplesTotal       = "clockwatch_step_samples_total"
	MetricSampleErrorsTotal  = "clockwatch_step_sample_errors_total"
	MetricJournalPersistence = "clockwatch_journal_persistence_ok"
	MetricBusDroppedTotal    = "clockwatch_bus_events_dropped_total"
	MetricWatcherUp          = "clockwatch_clock_set_watcher_up"
	MetricPublishDelay       = "clockwatch_clock_event_publish_delay_seconds"
)

// DelayBuckets are the detection-delay histogram's upper bounds, in seconds:
// from 10 µs (a mark on an idle machine) to 1 s (sampling at a slow interval).
var DelayBuckets = []float64{1e-5, 2.5e-5, 5e-5, 1e-4, 2.5e-4, 5e-4, 1e-3, 2.5e-3, 5e-3, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1}

// PersistenceReporter tells whether events and the epoch are being
// persisted (the journal implements it).
type PersistenceReporter interface{ Persistent() bool }

// DropCounter counts events dropped for full subscribers (the bus
// implements it).
type DropCounter interface{ Dropped() uint64 }

// WatcherStatus tells whether the kernel's clock-set notifications are
// being watched (the probe's ClockSetWatcher implements it).
type WatcherStatus interface{ Watching() bool }

// Collector exports step detection as Prometheus metrics. Record is a sink
// for the Sampler; everything else is read at scrape time.
type Collector struct {
	gauges  *Gauges
	journal PersistenceReporter
	bus     DropCounter
	watcher WatcherStatus

	steps, lastStep, lastStepTime, largest, epoch, delay, slew             *prometheus.Desc
	clockSets, resumes, samples, sampleErrs, journalOK, dropped, watcherUp *prometheus.Desc
	publishDelay                                                           *prometheus.Desc

	mu                 sync.Mutex
	backward, forward  uint64
	clockSetN, resumeN uint64
	last               Event
	haveLast           bool
	largestStep        time.Duration
	delayCounts        []uint64 // per bucket, not cumulative; the last is +Inf
	delayCount         uint64
	delaySum           float64
}

var _ prometheus.Collector = (*Collector)(nil)

// NewCollector returns a Collector over a Sampler's gauges. journal, bus and
// watcher may be nil, and their metrics are then left out.
func NewCollector(g *Gauges, journal PersistenceReporter, bus DropCounter, watcher WatcherStatus) *Collector {
	d := func(name, help string, labels ...string) *prometheus.Desc {
		return prometheus.NewDesc(name, help, labels, nil)
	}
	return &Collector{
		gauges: g, journal: journal, bus: bus, watcher: watcher,
		steps:        d(MetricStepsTotal, "Steps of the wall clock (leap seconds included) seen since clockwatch started, by direction.", "direction"),
		lastStep:     d(MetricLastStepSeconds, "Signed size of the last step of the wall clock in seconds (negative: backwards); 0 before any."),
		lastStepTime: d(MetricLastStepTimestamp, "Wall-clock time of the last step (after it), in seconds since the Unix epoch; 0 before any."),
		largest:      d(MetricLargestStepSeconds, "Largest absolute step of the wall clock seen since clockwatch started, in seconds."),
		epoch:        d(MetricEpoch, "Clock epoch: the number of wall-clock discontinuities, persisted across restarts; it never goes back."),
		delay:        d(MetricDetectionDelay, "Step detection delay in seconds: from the kernel's clock-set notification to the event, or the sampling interval (an upper bound) when sampling alone saw the step."),
		slew:         d(MetricSlewRate, "Rate at which the REALTIME−BOOTTIME gap changes outside steps, as a ratio, over the last slew window. On Linux slews move both clocks, so this stays near 0."),
		clockSets:    d(MetricClockSetsTotal, "Clock-set notifications from the kernel with no measurable step (not counting those explained by a step or a resume)."),
		resumes:      d(MetricResumesTotal, "Resumes from suspend seen (BOOTTIME advanced beyond MONOTONIC)."),
		samples:      d(MetricSamplesTotal, "Clock samples compared by the step detector."),
		sampleErrs:   d(MetricSampleErrorsTotal, "Clock samples that could not be read."),
		journalOK:    d(MetricJournalPersistence, "1 when step events and the clock epoch are persisted under the state directory, 0 when clockwatch runs without persistence."),
		dropped:      d(MetricBusDroppedTotal, "Events dropped for in-process subscribers whose buffer was full."),
		watcherUp:    d(MetricWatcherUp, "1 while the kernel's clock-set notifications (a CANCEL_ON_SET timerfd) are watched; 0 means steps are seen by sampling only, up to one interval late and only above the slew allowance."),
		publishDelay: d(MetricPublishDelay, "Latency from the kernel's clock-set notification (the watcher's CLOCK_MONOTONIC read as it woke) to the event being on the in-process bus, for every event a notification revealed (steps, clock sets, resumes): clockwatch's own part of the detection latency."),
		delayCounts:  make([]uint64, len(DelayBuckets)+1),
	}
}

// Record counts an event. It is a Sampler sink: quick and non-blocking.
func (c *Collector) Record(e Event) {
	c.mu.Lock()
	defer c.mu.Unlock()
	switch e.Type {
	case TypeClockSet:
		c.clockSetN++
		return
	case TypeWake:
		c.resumeN++
		return
	}
	if e.Step < 0 {
		c.backward++
	} else {
		c.forward++
	}
	c.last, c.haveLast = e, true
	c.largestStep = max(c.largestStep, e.Step.Abs())
	if e.Seen == SeenRestart {
		return // no detection delay to speak of: nobody was watching
	}
	secs := e.Delay.Seconds()
	i := 0
	for i < len(DelayBuckets) && secs > DelayBuckets[i] {
		i++
	}
	c.delayCounts[i]++
	c.delayCount++
	c.delaySum += secs
}

// Describe sends every descriptor.
func (c *Collector) Describe(ch chan<- *prometheus.Desc) {
	for _, d := range []*prometheus.Desc{
		c.steps, c.lastStep, c.lastStepTime, c.largest, c.epoch, c.delay, c.slew,
		c.clockSets, c.resumes, c.samples, c.sampleErrs, c.journalOK, c.dropped, c.watcherUp, c.publishDelay,
	} {
		ch <- d
	}
}

// Collect sends the current values.
func (c *Collector) Collect(ch chan<- prometheus.Metric) {
	snap := c.gauges.Load()
	c.mu.Lock()
	backward, forward, clockSets, resumes := c.backward, c.forward, c.clockSetN, c.resumeN
	var lastStep, lastTime float64
	if c.haveLast {
		lastStep = c.last.StepSeconds()
		lastTime = float64(c.last.WallAfter.UnixNano()) / 1e9
	}
	largest := c.largestStep.Seconds()
	buckets := make(map[float64]uint64, len(DelayBuckets))
	var cum uint64
	for i, ub := range DelayBuckets {
		cum += c.delayCounts[i]
		buckets[ub] = cum
	}
	count, sum := c.delayCount, c.delaySum
	c.mu.Unlock()

	m := prometheus.MustNewConstMetric
	ch <- m(c.steps, prometheus.CounterValue, float64(backward), "backward")
	ch <- m(c.steps, prometheus.CounterValue, float64(forward), "forward")
	ch <- m(c.lastStep, prometheus.GaugeValue, lastStep)
	ch <- m(c.lastStepTime, prometheus.GaugeValue, lastTime)
	ch <- m(c.largest, prometheus.GaugeValue, largest)
	ch <- m(c.epoch, prometheus.GaugeValue, float64(snap.State.Epoch))
	ch <- prometheus.MustNewConstHistogram(c.delay, count, sum, buckets)
	pc, ps, pb := c.gauges.Published().Snapshot()
	ch <- prometheus.MustNewConstHistogram(c.publishDelay, pc, ps, pb)
	ch <- m(c.slew, prometheus.GaugeValue, snap.Slew.Rate)
	ch <- m(c.clockSets, prometheus.CounterValue, float64(clockSets))
	ch <- m(c.resumes, prometheus.CounterValue, float64(resumes))
	ch <- m(c.samples, prometheus.CounterValue, float64(snap.Samples))
	ch <- m(c.sampleErrs, prometheus.CounterValue, float64(snap.ReadErrors))
	if c.journal != nil {
		ok := 0.0
		if c.journal.Persistent() {
			ok = 1
		}
		ch <- m(c.journalOK, prometheus.GaugeValue, ok)
	}
	if c.bus != nil {
		ch <- m(c.dropped, prometheus.CounterValue, float64(c.bus.Dropped()))
	}
	if c.watcher != nil {
		up := 0.0
		if c.watcher.Watching() {
			up = 1
		}
		ch <- m(c.watcherUp, prometheus.GaugeValue, up)
	}
}
