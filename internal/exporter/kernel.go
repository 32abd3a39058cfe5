package exporter

import (
	"sync/atomic"

	"github.com/clockwatch/clockwatch/internal/hostclock"
	"github.com/clockwatch/clockwatch/internal/kernel"
	"github.com/prometheus/client_golang/prometheus"
	dto "github.com/prometheus/client_model/go"
)

// Metric names of the KernelUpdater (the kernel's timex).
const (
	MetricKernelOffset          = "clockwatch_kernel_offset_seconds"
	MetricKernelFrequency       = "clockwatch_kernel_frequency_offset_ratio"
	MetricKernelMaxError        = "clockwatch_kernel_maxerror_seconds"
	MetricKernelEstError        = "clockwatch_kernel_esterror_seconds"
	MetricKernelSynchronized    = "clockwatch_kernel_synchronized"
	MetricKernelStatus          = "clockwatch_kernel_status_flags"
	MetricKernelTAIOffset       = "clockwatch_kernel_tai_offset_seconds"
	MetricKernelLeapPending     = "clockwatch_kernel_leap_pending"
	MetricKernelClockState      = "clockwatch_kernel_clock_state"
	MetricKernelTimeConstant    = "clockwatch_kernel_time_constant"
	MetricKernelTick            = "clockwatch_kernel_tick_seconds"
	MetricKernelTolerance       = "clockwatch_kernel_tolerance_ratio"
	MetricKernelPrecision       = "clockwatch_kernel_precision_seconds"
	MetricKernelOffsetArtifacts = "clockwatch_kernel_offset_artifacts_total"
)

// KernelUpdater reads the kernel's clock discipline state (adjtimex, read-only)
// at scrape time.
type KernelUpdater struct {
	timex     hostclock.TimexReader
	artifacts atomic.Uint64

	offset, freq, maxerr, esterr, synced, status, tai, leap, state,
	constant, tick, tolerance, precision, artifactsDesc *prometheus.Desc

	// stateLabels are the label pairs of each clock state, built once.
	stateLabels [kernel.TimeError + 1][]*dto.LabelPair
}

// kernelMetrics is how many series the KernelUpdater sends.
const kernelMetrics = 13 + int(kernel.TimeError) + 1

var _ Updater = (*KernelUpdater)(nil)

// NewKernelUpdater reads through timex.
func NewKernelUpdater(timex hostclock.TimexReader) *KernelUpdater {
	p := &KernelUpdater{
		timex:     timex,
		offset:    desc(MetricKernelOffset, "Phase offset the kernel PLL is still correcting (adjtimex offset)."),
		freq:      desc(MetricKernelFrequency, "Frequency offset the kernel applies to the clock, as a ratio near 0 (adjtimex freq; node_exporter's node_timex_frequency_adjustment_ratio is 1 + this)."),
		maxerr:    desc(MetricKernelMaxError, "Kernel maximum error bound; saturates at 16 s when nothing disciplines the clock."),
		esterr:    desc(MetricKernelEstError, "Kernel estimated error, as set by the time daemon."),
		synced:    desc(MetricKernelSynchronized, "Whether the kernel considers the clock synchronised: STA_UNSYNC clear and state not TIME_ERROR (1) or not (0)."),
		status:    desc(MetricKernelStatus, "The adjtimex status word (STA_* bits), for the flags that have no metric of their own."),
		tai:       desc(MetricKernelTAIOffset, "TAI−UTC offset the kernel was told."),
		leap:      desc(MetricKernelLeapPending, "Leap second pending at the end of the UTC day: 1 insert, -1 delete, 0 none."),
		state:     desc(MetricKernelClockState, "The kernel's clock state (adjtimex return value): 1 for the current state.", "state"),
		constant:  desc(MetricKernelTimeConstant, "PLL time constant."),
		tick:      desc(MetricKernelTick, "Length of a clock tick."),
		tolerance: desc(MetricKernelTolerance, "Largest frequency error the kernel tolerates, as a ratio."),
		precision: desc(MetricKernelPrecision, "Clock precision."),
		artifactsDesc: desc(MetricKernelOffsetArtifacts,
			"Offsets read back larger than the kernel ever holds (such as the transient 2^32 ns seen on KVM), dropped rather than reported."),
	}
	for st := kernel.TimeOK; st <= kernel.TimeError; st++ {
		p.stateLabels[st] = labelPairs([]string{"state"}, st.String())
	}
	return p
}

// Name implements Updater.
func (p *KernelUpdater) Name() string { return "kernel" }

// Describe implements Updater.
func (p *KernelUpdater) Describe(ch chan<- *prometheus.Desc) {
	for _, d := range []*prometheus.Desc{p.offset, p.freq, p.maxerr, p.esterr, p.synced, p.status, p.tai,
		p.leap, p.state, p.constant, p.tick, p.tolerance, p.precision, p.artifactsDesc} {
		ch <- d
	}
}

// Update implements Updater.
func (p *KernelUpdater) Update(ch chan<- prometheus.Metric) error {
	raw, err := p.timex.ReadTimex()
	if err != nil {
		return err
	}
	tx := kernel.Decode(raw)
	if tx.Artifact {
		p.artifacts.Add(1)
	}
	b := newMetricBatch(kernelMetrics)
	gauge := func(d *prometheus.Desc, v float64) { ch <- b.next(d, prometheus.GaugeValue, v, nil) }
	if !tx.Artifact {
		gauge(p.offset, tx.Offset.Seconds())
	}
	gauge(p.freq, tx.Frequency)
	gauge(p.maxerr, tx.MaxError.Seconds())
	gauge(p.esterr, tx.EstError.Seconds())
	gauge(p.synced, boolFloat(tx.Synchronized()))
	gauge(p.status, float64(tx.Status))
	gauge(p.tai, tx.TAI.Seconds())
	gauge(p.leap, float64(tx.LeapPending()))
	for s := kernel.TimeOK; s <= kernel.TimeError; s++ {
		ch <- b.next(p.state, prometheus.GaugeValue, boolFloat(s == tx.State), p.stateLabels[s])
	}
	gauge(p.constant, float64(tx.Constant))
	gauge(p.tick, tx.Tick.Seconds())
	gauge(p.tolerance, tx.Tolerance)
	gauge(p.precision, tx.Precision.Seconds())
	ch <- b.next(p.artifactsDesc, prometheus.CounterValue, float64(p.artifacts.Load()), nil)
	return nil
}

func boolFloat(b bool) float64 {
	if b {
		return 1
	}
	return 0
}
