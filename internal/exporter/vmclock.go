package exporter

import (
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/clockwatch/clockwatch/internal/probe/vmclock"
)

// Metric names of the VMClock source.
const (
	MetricVMClockUp                 = "clockwatch_vmclock_up"
	MetricVMClockPolls              = "clockwatch_vmclock_polls_total"
	MetricVMClockPollFailures       = "clockwatch_vmclock_poll_failures_total"
	MetricVMClockPollAge            = "clockwatch_vmclock_poll_age_seconds"
	MetricVMClockDisruptionMarker   = "clockwatch_vmclock_disruption_marker"
	MetricVMClockDisruptions        = "clockwatch_vmclock_disruptions_total"
	MetricVMClockLastDisruption     = "clockwatch_vmclock_last_disruption_timestamp_seconds"
	MetricVMClockClockStatus        = "clockwatch_vmclock_clock_status"
	MetricVMClockLeap               = "clockwatch_vmclock_leap_indicator"
	MetricVMClockDisruptionSoon     = "clockwatch_vmclock_disruption_soon"
	MetricVMClockDisruptionImminent = "clockwatch_vmclock_disruption_imminent"
	MetricVMClockTime               = "clockwatch_vmclock_time_seconds"
	MetricVMClockMaxError           = "clockwatch_vmclock_time_max_error_seconds"
	MetricVMClockEstError           = "clockwatch_vmclock_time_estimated_error_seconds"
	MetricVMClockPeriodMaxError     = "clockwatch_vmclock_period_max_error_ratio"
	MetricVMClockPeriodEstError     = "clockwatch_vmclock_period_estimated_error_ratio"
	MetricVMClockTAIOffset          = "clockwatch_vmclock_tai_offset_seconds"
	MetricVMClockVMGeneration       = "clockwatch_vmclock_vm_generation"
)

// VMClockSnapshotter gives the VMClock poller's last result; *vmclock.Poller
// fits.
type VMClockSnapshotter = Snapshotter[vmclock.Snapshot]

var _ VMClockSnapshotter = (*vmclock.Poller)(nil)

// VMClockCollector exports the VMClock page. Like ptp4l's, an absent device
// (mode auto, no /dev/vmclock0) exports nothing at all: most machines have
// none. Each figure is exported only while the page's flags say it is valid.
type VMClockCollector struct {
	src VMClockSnapshotter
	now func() time.Time

	up, polls, failures, age, marker, disruptions, lastDisruption, status, leap, soon, imminent,
	timeSec, maxErr, estErr, periodMax, periodEst, tai, generation *prometheus.Desc
}

var _ prometheus.Collector = (*VMClockCollector)(nil)

// NewVMClockCollector exports what src keeps.
func NewVMClockCollector(src VMClockSnapshotter) *VMClockCollector {
	return &VMClockCollector{
		src:            src,
		now:            time.Now,
		up:             desc(MetricVMClockUp, "Whether the last read of the VMClock page (/dev/vmclock0) succeeded (1) or not (0)."),
		polls:          desc(MetricVMClockPolls, "Reads of the VMClock page since clockwatch started."),
		failures:       desc(MetricVMClockPollFailures, "Reads of the VMClock page that failed."),
		age:            desc(MetricVMClockPollAge, "Time since the last successful read of the VMClock page."),
		marker:         desc(MetricVMClockDisruptionMarker, "The hypervisor's disruption marker: it changes on every live migration and snapshot restore (a u64: exact up to 2^53)."),
		disruptions:    desc(MetricVMClockDisruptions, "Changes of the disruption marker clockwatch saw since it started (a change while it was not running is a stepdown, not counted here)."),
		lastDisruption: desc(MetricVMClockLastDisruption, "When clockwatch last saw the disruption marker change (Unix time)."),
		status:         desc(MetricVMClockClockStatus, "The hypervisor's clock status: 1 for the current one, 0 for the others.", "status"),
		leap:           desc(MetricVMClockLeap, "The page's leap indicator: 0 none, 1 positive leap second at the end of the month, 2 negative, 3 during 23:59:60, 4 after a positive one, 5 after a negative one."),
		soon:           desc(MetricVMClockDisruptionSoon, "Whether the hypervisor announces a maintenance event (a disruption) in about a day."),
		imminent:       desc(MetricVMClockDisruptionImminent, "Whether the hypervisor announces a maintenance event (a disruption) in about an hour."),
		timeSec:        desc(MetricVMClockTime, "Only when the hypervisor offers a time (status synchronized or free_running, UTC or TAI): the time at the page's last update, not now."),
		maxErr:         desc(MetricVMClockMaxError, "Only when its flag is set: the maximum error of the hypervisor's time."),
		estErr:         desc(MetricVMClockEstError, "Only when its flag is set: the estimated error of the hypervisor's time."),
		periodMax:      desc(MetricVMClockPeriodMaxError, "Only when its flag is set: the maximum error of the counter's period, relative to the period."),
		periodEst:      desc(MetricVMClockPeriodEstError, "Only when its flag is set: the estimated error of the counter's period, relative to the period."),
		tai:            desc(MetricVMClockTAIOffset, "Only when its flag is set: TAI minus UTC."),
		generation:     desc(MetricVMClockVMGeneration, "Only when the hypervisor has one: the VM generation counter, which changes on every snapshot restore."),
	}
}

// Describe implements prometheus.Collector.
func (c *VMClockCollector) Describe(ch chan<- *prometheus.Desc) {
	for _, d := range []*prometheus.Desc{c.up, c.polls, c.failures, c.age, c.marker, c.disruptions, c.lastDisruption,
		c.status, c.leap, c.soon, c.imminent, c.timeSec, c.maxErr, c.estErr, c.periodMax, c.periodEst, c.tai, c.generation} {
		ch <- d
	}
}

// Collect implements prometheus.Collector.
func (c *VMClockCollector) Collect(ch chan<- prometheus.Metric) {
	s := c.src.Snapshot()
	if !s.Found && s.Polls == 0 {
		return // absent
	}
	gauge := func(d *prometheus.Desc, v float64, lv ...string) {
		ch <- prometheus.MustNewConstMetric(d, prometheus.GaugeValue, v, lv...)
	}
	counter := func(d *prometheus.Desc, v float64) {
		ch <- prometheus.MustNewConstMetric(d, prometheus.CounterValue, v)
	}
	gauge(c.up, boolFloat(s.Up))
	counter(c.polls, float64(s.Polls))
	counter(c.failures, float64(s.Failures))
	if !s.Found {
		return
	}
	counter(c.disruptions, float64(s.Disruptions))
	if !s.DisruptionAt.IsZero() {
		gauge(c.lastDisruption, float64(s.DisruptionAt.UnixNano())/1e9)
	}
	gauge(c.age, c.now().Sub(s.LastSuccess).Seconds())
	if !s.Up {
		return
	}
	p := s.Page
	gauge(c.marker, float64(p.DisruptionMarker))
	for _, st := range vmclock.Statuses() {
		gauge(c.status, boolFloat(p.ClockStatus == st), st.String())
	}
	gauge(c.leap, float64(p.LeapIndicator))
	gauge(c.soon, boolFloat(p.Flags&vmclock.FlagDisruptionSoon != 0))
	gauge(c.imminent, boolFloat(p.Flags&vmclock.FlagDisruptionImminent != 0))
	if p.HasTime() {
		t := p.Time()
		gauge(c.timeSec, float64(t.Unix())+float64(t.Nanosecond())/1e9)
	}
	if d, ok := p.MaxError(); ok {
		gauge(c.maxErr, d.Seconds())
	}
	if d, ok := p.EstError(); ok {
		gauge(c.estErr, d.Seconds())
	}
	if r, ok := p.PeriodMaxErrorRatio(); ok {
		gauge(c.periodMax, r)
	}
	if r, ok := p.PeriodEstErrorRatio(); ok {
		gauge(c.periodEst, r)
	}
	if p.Flags&vmclock.FlagTAIOffsetValid != 0 {
		gauge(c.tai, float64(p.TAIOffset))
	}
	if p.Flags&vmclock.FlagVMGenCounterPresent != 0 {
		gauge(c.generation, float64(p.VMGeneration))
	}
}
