package exporter

import (
	"errors"
	"fmt"
	"math/bits"
	"sync"
	"sync/atomic"
	"time"

	"github.com/clockwatch/clockwatch/internal/probe/chrony"
	"github.com/prometheus/client_golang/prometheus"
	dto "github.com/prometheus/client_model/go"
)

// Metric names of the ChronyUpdater. clockwatch_chrony_up comes from the
// Scraper (the updater's name is "chrony").
const (
	MetricChronyPollAge      = "clockwatch_chrony_poll_age_seconds"
	MetricChronyPollDuration = "clockwatch_chrony_poll_duration_seconds"
	MetricChronyPolls        = "clockwatch_chrony_polls_total"
	MetricChronyPollFailures = "clockwatch_chrony_poll_failures_total"
	MetricChronyConnection   = "clockwatch_chrony_connection_info"

	MetricChronyTrackingInfo       = "clockwatch_chrony_tracking_info"
	MetricChronyStratum            = "clockwatch_chrony_tracking_stratum"
	MetricChronyLeapStatus         = "clockwatch_chrony_tracking_leap_status"
	MetricChronySynchronized       = "clockwatch_chrony_tracking_synchronized"
	MetricChronySystemOffset       = "clockwatch_chrony_tracking_system_time_offset_seconds"
	MetricChronyLastOffset         = "clockwatch_chrony_tracking_last_offset_seconds"
	MetricChronyRMSOffset          = "clockwatch_chrony_tracking_rms_offset_seconds"
	MetricChronyFrequency          = "clockwatch_chrony_tracking_frequency_ratio"
	MetricChronyResidualFrequency  = "clockwatch_chrony_tracking_residual_frequency_ratio"
	MetricChronySkew               = "clockwatch_chrony_tracking_skew_ratio"
	MetricChronyRootDelay          = "clockwatch_chrony_tracking_root_delay_seconds"
	MetricChronyRootDispersion     = "clockwatch_chrony_tracking_root_dispersion_seconds"
	MetricChronyUpdateInterval     = "clockwatch_chrony_tracking_update_interval_seconds"
	MetricChronyReferenceTimestamp = "clockwatch_chrony_tracking_reference_timestamp_seconds"
	MetricChronyErrorBound         = "clockwatch_chrony_clock_error_bound_seconds"
	MetricChronySelectableSources  = "clockwatch_chrony_selectable_sources"

	MetricChronySourceInfo              = "clockwatch_chrony_source_info"
	MetricChronySourceStratum           = "clockwatch_chrony_source_stratum"
	MetricChronySourcePollInterval      = "clockwatch_chrony_source_poll_interval_seconds"
	MetricChronySourceReachRegister     = "clockwatch_chrony_source_reach_register"
	MetricChronySourceReachability      = "clockwatch_chrony_source_reachability_ratio"
	MetricChronySourceLastSampleAge     = "clockwatch_chrony_source_last_sample_age_seconds"
	MetricChronySourceLastSampleOffset  = "clockwatch_chrony_source_last_sample_offset_seconds"
	MetricChronySourceLastSampleError   = "clockwatch_chrony_source_last_sample_error_seconds"
	MetricChronySourceSamples           = "clockwatch_chrony_source_samples"
	MetricChronySourceRuns              = "clockwatch_chrony_source_runs"
	MetricChronySourceSpan              = "clockwatch_chrony_source_span_seconds"
	MetricChronySourceStdDev            = "clockwatch_chrony_source_std_dev_seconds"
	MetricChronySourceEstimatedOffset   = "clockwatch_chrony_source_estimated_offset_seconds"
	MetricChronySourceEstimatedOffErr   = "clockwatch_chrony_source_estimated_offset_error_seconds"
	MetricChronySourceResidualFrequency = "clockwatch_chrony_source_residual_frequency_ratio"
	MetricChronySourceSkew              = "clockwatch_chrony_source_skew_ratio"

	MetricChronyConfigAuditSuccess = "clockwatch_chrony_config_audit_success"
	MetricChronyConfigRuntimeStep  = "clockwatch_chrony_config_runtime_step_allowed"
	MetricChronyConfigStepThresh   = "clockwatch_chrony_config_step_threshold_seconds"
	MetricChronyConfigStepLimit    = "clockwatch_chrony_config_step_limit"
	MetricChronyConfigMaxSlewRate  = "clockwatch_chrony_config_max_slew_rate_ratio"
)

// ChronySnapshotter gives the chrony poller's last result; *chrony.Poller
// fits.
type ChronySnapshotter = Snapshotter[chrony.Snapshot]

var _ ChronySnapshotter = (*chrony.Poller)(nil)

// errChronyNotPolled is the updater's error before the poller's first poll.
var errChronyNotPolled = errors.New("chronyd has not been polled yet")

// SourceDetailer says whether every per-source figure is wanted
// (chrony.source_details); *chrony.Poller fits. A ChronySnapshotter that
// does not implement it gets every figure.
type SourceDetailer interface {
	SourceDetails() bool
}

var _ SourceDetailer = (*chrony.Poller)(nil)

// ChronyUpdater exports the chrony poller's last snapshot. A scrape never
// waits on chronyd: it reads what the poller keeps.
type ChronyUpdater struct {
	src     ChronySnapshotter
	now     func() time.Time
	details bool
	// split is set once Gatherer has been called: the figures then come
	// from that Gatherer, and Update only reports whether chronyd answers.
	split atomic.Bool

	pollAge, pollDuration, polls, failures, connection *prometheus.Desc

	trackingInfo, stratum, leap, synced, sysOffset, lastOffset, rmsOffset, freq, residFreq, skew,
	rootDelay, rootDisp, updateInterval, refTime, errorBound, selectable *prometheus.Desc

	srcInfo, srcStratum, srcPoll, srcReach, srcReachRatio, srcAge, srcOffset, srcError,
	srcSamples, srcRuns, srcSpan, srcStdDev, srcEstOffset, srcEstOffErr, srcResidFreq, srcSkew *prometheus.Desc

	auditOK, runtimeStep, stepThresh, stepLimit, maxSlew *prometheus.Desc

	// mu guards the label pairs kept from one scrape to the next, so that
	// a scrape builds them only for what changed.
	mu         sync.Mutex
	gen        uint64
	sources    map[sourceKey]*sourceLabels
	tracking   chrony.Tracking // what trackingLs was built from
	trackingLs []*dto.LabelPair
	connKey    [2]string
	connLs     []*dto.LabelPair
}

// sourceKey identifies a source's series.
type sourceKey struct{ address, name string }

// sourceLabels are a source's label pairs: address and name, and those
// with its mode and state for the info series.
type sourceLabels struct {
	gen         uint64 // the last scrape that saw the source
	ls          []*dto.LabelPair
	mode, state string
	info        []*dto.LabelPair
}

// chronyMetricsPerSource is how many series a source has at most.
const chronyMetricsPerSource = 16

// chronyMetricsFixed is how many series there are besides the sources'.
const chronyMetricsFixed = 32

var _ Updater = (*ChronyUpdater)(nil)

// NewChronyUpdater exports what src keeps.
func NewChronyUpdater(src ChronySnapshotter) *ChronyUpdater {
	// The source labels are chrony_exporter's, so that its users' queries
	// and dashboards carry over (docs/metrics.md).
	s := func(name, help string) *prometheus.Desc { return desc(name, help, "source_address", "source_name") }
	details := true
	if sd, ok := src.(SourceDetailer); ok {
		details = sd.SourceDetails()
	}
	return &ChronyUpdater{
		src:     src,
		now:     time.Now,
		details: details,

		pollAge:      desc(MetricChronyPollAge, "Time since the last successful poll of chronyd; the chrony figures are this old."),
		pollDuration: desc(MetricChronyPollDuration, "How long the last poll of chronyd took (tracking, sources and sourcestats)."),
		polls:        desc(MetricChronyPolls, "Polls of chronyd since clockwatch started."),
		failures:     desc(MetricChronyPollFailures, "Polls of chronyd that failed."),
		connection:   desc(MetricChronyConnection, "How clockwatch reaches chronyd: transport unix (all commands) or udp (tracking and sources only), and the address.", "transport", "address"),

		trackingInfo:   desc(MetricChronyTrackingInfo, "chronyd's reference, as chronyc tracking shows it: reference ID in hex, name (address or refclock ID) and address.", "ref_id", "ref_name", "ref_address"),
		stratum:        desc(MetricChronyStratum, "chronyd's stratum."),
		leap:           desc(MetricChronyLeapStatus, "chronyd's leap status: 0 normal, 1 insert second, 2 delete second, 3 not synchronised."),
		synced:         desc(MetricChronySynchronized, "Whether chronyd is synchronised (leap status not 3)."),
		sysOffset:      desc(MetricChronySystemOffset, "Local clock minus true time as chronyd estimates it now (chronyc's System time; positive: the clock is ahead). chronyd slews it away."),
		lastOffset:     desc(MetricChronyLastOffset, "Offset of the local clock estimated at the last clock update (positive: ahead)."),
		rmsOffset:      desc(MetricChronyRMSOffset, "Long-term average (RMS) of the offset."),
		freq:           desc(MetricChronyFrequency, "Rate at which the clock would be wrong without chronyd's correction (positive: fast)."),
		residFreq:      desc(MetricChronyResidualFrequency, "Difference between the reference's measured frequency and the one in use."),
		skew:           desc(MetricChronySkew, "Estimated error bound of the frequency."),
		rootDelay:      desc(MetricChronyRootDelay, "Total network path delay to the stratum-1 clock."),
		rootDisp:       desc(MetricChronyRootDispersion, "Total dispersion accumulated to the stratum-1 clock."),
		updateInterval: desc(MetricChronyUpdateInterval, "Interval between the last two clock updates."),
		refTime:        desc(MetricChronyReferenceTimestamp, "When chronyd last updated the clock from its reference."),
		errorBound:     desc(MetricChronyErrorBound, "Largest error of the local clock that chronyd's figures allow: |system offset| + root dispersion + root delay / 2."),
		selectable:     desc(MetricChronySelectableSources, "Sources chronyd may select now (state sync or candidate)."),

		srcInfo:       desc(MetricChronySourceInfo, "One series per source with its mode (client, peer, refclock) and state (sync, candidate, falseticker, jittery, outlier, unreach).", "source_address", "source_name", "source_mode", "source_state"),
		srcStratum:    s(MetricChronySourceStratum, "Stratum of the source."),
		srcPoll:       s(MetricChronySourcePollInterval, "Interval at which chronyd polls the source."),
		srcReach:      s(MetricChronySourceReachRegister, "Reach register: one bit for each of the last 8 polls, set when it was answered (0-255)."),
		srcReachRatio: s(MetricChronySourceReachability, "Share of the last 8 polls the source answered."),
		srcAge:        s(MetricChronySourceLastSampleAge, "Time since the source's last sample, at the scrape (the poll's figure plus the time since the poll); absent when it never gave one."),
		srcOffset:     s(MetricChronySourceLastSampleOffset, "Offset of the last sample, local clock minus source (positive: local ahead), adjusted for slews since."),
		srcError:      s(MetricChronySourceLastSampleError, "Margin of error of the last sample."),
		srcSamples:    s(MetricChronySourceSamples, "Sample points chronyd keeps for the source (sourcestats NP)."),
		srcRuns:       s(MetricChronySourceRuns, "Runs of residuals with the same sign (sourcestats NR)."),
		srcSpan:       s(MetricChronySourceSpan, "Time between the oldest and newest samples."),
		srcStdDev:     s(MetricChronySourceStdDev, "Estimated sample standard deviation."),
		srcEstOffset:  s(MetricChronySourceEstimatedOffset, "Estimated offset of the source, local clock minus source."),
		srcEstOffErr:  s(MetricChronySourceEstimatedOffErr, "Error bound of the estimated offset."),
		srcResidFreq:  s(MetricChronySourceResidualFrequency, "Residual frequency of the source."),
		srcSkew:       s(MetricChronySourceSkew, "Error bound of the source's residual frequency."),

		auditOK:     desc(MetricChronyConfigAuditSuccess, "Whether chrony.conf (and what it includes) could be read and understood."),
		runtimeStep: desc(MetricChronyConfigRuntimeStep, "Whether chrony.conf lets chronyd step the clock at any time (makestep with a negative limit)."),
		stepThresh:  desc(MetricChronyConfigStepThresh, "makestep threshold: offsets above it are stepped, while steps are allowed."),
		stepLimit:   desc(MetricChronyConfigStepLimit, "makestep limit: clock updates after start that may step; -1 means unlimited."),
		maxSlew:     desc(MetricChronyConfigMaxSlewRate, "Largest rate at which chronyd slews the clock (maxslewrate)."),
	}
}

// Name implements Updater: the Scraper exports clockwatch_chrony_up.
func (p *ChronyUpdater) Name() string { return "chrony" }

// Describe implements Updater.
func (p *ChronyUpdater) Describe(ch chan<- *prometheus.Desc) {
	for _, d := range []*prometheus.Desc{
		p.pollAge, p.pollDuration, p.polls, p.failures, p.connection,
		p.trackingInfo, p.stratum, p.leap, p.synced, p.sysOffset, p.lastOffset, p.rmsOffset, p.freq, p.residFreq, p.skew,
		p.rootDelay, p.rootDisp, p.updateInterval, p.refTime, p.errorBound, p.selectable,
		p.srcInfo, p.srcStratum, p.srcPoll, p.srcReach, p.srcReachRatio, p.srcAge, p.srcOffset, p.srcError,
		p.srcSamples, p.srcRuns, p.srcSpan, p.srcStdDev, p.srcEstOffset, p.srcEstOffErr, p.srcResidFreq, p.srcSkew,
		p.auditOK, p.runtimeStep, p.stepThresh, p.stepLimit, p.maxSlew,
	} {
		ch <- d
	}
}

// Update implements Updater. It fails (clockwatch_chrony_up 0) when the last
// poll failed; chronyd's figures are then left out rather than exported
// stale, while the poll counters, the data's age and the audit stay. Once
// Gatherer has been called it sends nothing: the Gatherer sends the
// figures.
func (p *ChronyUpdater) Update(ch chan<- prometheus.Metric) error {
	s := p.src.Snapshot()
	if p.split.Load() {
		switch {
		case s.Polls == 0:
			return errChronyNotPolled
		case !s.Up:
			return fmt.Errorf("polling chronyd: %w", s.Err)
		}
		return nil
	}
	return p.update(ch, s, true, true)
}

// update sends the snapshot's metrics: those that change only with the
// snapshot (static), and the ages, which grow between polls (dynamic).
func (p *ChronyUpdater) update(ch chan<- prometheus.Metric, s chrony.Snapshot, static, dynamic bool) error {
	p.mu.Lock()
	defer p.mu.Unlock()
	b := newMetricBatch(chronyMetricsFixed + chronyMetricsPerSource*len(s.Data.Sources))
	gaugeL := func(d *prometheus.Desc, v float64, ls []*dto.LabelPair) {
		if static {
			ch <- b.next(d, prometheus.GaugeValue, v, ls)
		}
	}
	gauge := func(d *prometheus.Desc, v float64) { gaugeL(d, v, nil) }
	age := func(d *prometheus.Desc, v float64, ls []*dto.LabelPair) {
		if dynamic {
			ch <- b.next(d, prometheus.GaugeValue, v, ls)
		}
	}
	if static {
		ch <- b.next(p.polls, prometheus.CounterValue, float64(s.Polls), nil)
		ch <- b.next(p.failures, prometheus.CounterValue, float64(s.Failures), nil)
	}
	p.updateAudit(s, gauge)
	if s.Polls == 0 {
		return errChronyNotPolled
	}
	gauge(p.pollDuration, s.PollDuration.Seconds())
	if s.HaveData {
		age(p.pollAge, p.now().Sub(s.LastSuccess).Seconds(), nil)
	}
	if !s.Up {
		return fmt.Errorf("polling chronyd: %w", s.Err)
	}
	if k := [2]string{string(s.Transport), s.Address}; p.connLs == nil || k != p.connKey {
		p.connKey, p.connLs = k, labelPairs([]string{"transport", "address"}, k[0], k[1])
	}
	gaugeL(p.connection, 1, p.connLs)

	t := s.Data.Tracking
	if p.trackingLs == nil || t.RefID != p.tracking.RefID || t.RefName != p.tracking.RefName || t.Address != p.tracking.Address {
		p.tracking = t
		p.trackingLs = labelPairs([]string{"ref_id", "ref_name", "ref_address"}, fmt.Sprintf("%08X", t.RefID), t.RefName, t.Address)
	}
	gaugeL(p.trackingInfo, 1, p.trackingLs)
	gauge(p.stratum, float64(t.Stratum))
	gauge(p.leap, float64(t.Leap))
	gauge(p.synced, boolFloat(t.Synchronised()))
	gauge(p.sysOffset, t.SystemOffset)
	gauge(p.lastOffset, t.LastOffset)
	gauge(p.rmsOffset, t.RMSOffset)
	gauge(p.freq, t.Frequency)
	gauge(p.residFreq, t.ResidualFrequency)
	gauge(p.skew, t.Skew)
	gauge(p.rootDelay, t.RootDelay)
	gauge(p.rootDisp, t.RootDispersion)
	gauge(p.updateInterval, t.UpdateInterval)
	// Unix and Nanosecond, not UnixNano: past 2262 it wraps (the poller
	// refuses such a reference time; this keeps the export right anyway).
	gauge(p.refTime, float64(t.RefTime.Unix())+float64(t.RefTime.Nanosecond())/1e9)
	gauge(p.errorBound, t.ErrorBound())
	gauge(p.selectable, float64(s.Data.SelectableSources()))

	// Ages run on between polls (the poller follows chronyd's updates, so
	// seconds apart): say how old each sample is now, not at the poll.
	sincePoll := p.now().Sub(s.LastSuccess)
	p.gen++
	if p.sources == nil {
		p.sources = make(map[sourceKey]*sourceLabels)
	}
	for _, src := range s.Data.Sources {
		sl := p.sourceLabels(src)
		gauge := func(d *prometheus.Desc, v float64) { gaugeL(d, v, sl.ls) }
		gaugeL(p.srcInfo, 1, sl.info)
		gauge(p.srcStratum, float64(src.Stratum))
		gauge(p.srcPoll, src.Poll.Seconds())
		gauge(p.srcReachRatio, float64(bits.OnesCount8(src.Reachability))/8)
		if src.LastSampleAge >= 0 {
			age(p.srcAge, (src.LastSampleAge + sincePoll).Seconds(), sl.ls)
			gauge(p.srcOffset, src.LastSampleOffset)
			gauge(p.srcError, src.LastSampleError)
		}
		if st := src.Stats; st != nil {
			gauge(p.srcEstOffset, st.EstimatedOffset)
		}
		if !p.details {
			continue
		}
		gauge(p.srcReach, float64(src.Reachability))
		if st := src.Stats; st != nil {
			gauge(p.srcSamples, float64(st.Samples))
			gauge(p.srcRuns, float64(st.Runs))
			gauge(p.srcSpan, st.Span.Seconds())
			gauge(p.srcStdDev, st.StdDev)
			gauge(p.srcEstOffErr, st.EstimatedOffsetError)
			gauge(p.srcResidFreq, st.ResidualFrequency)
			gauge(p.srcSkew, st.Skew)
		}
	}
	if len(p.sources) > len(s.Data.Sources) {
		for k, sl := range p.sources {
			if sl.gen != p.gen {
				delete(p.sources, k) // a source chronyd no longer has
			}
		}
	}
	return nil
}

// sourceLabels returns src's label pairs, built when first seen (or when
// its mode or state changed), and marks it seen by this scrape.
func (p *ChronyUpdater) sourceLabels(src chrony.Source) *sourceLabels {
	k := sourceKey{src.Address, src.Name}
	sl := p.sources[k]
	if sl == nil {
		sl = &sourceLabels{ls: labelPairs([]string{"source_address", "source_name"}, src.Address, src.Name)}
		p.sources[k] = sl
	}
	if sl.info == nil || sl.mode != src.Mode || sl.state != src.State {
		sl.mode, sl.state = src.Mode, src.State
		sl.info = labelPairs([]string{"source_address", "source_name", "source_mode", "source_state"}, src.Address, src.Name, src.Mode, src.State)
	}
	sl.gen = p.gen
	return sl
}

func (p *ChronyUpdater) updateAudit(s chrony.Snapshot, gauge func(*prometheus.Desc, float64)) {
	if s.Audit == nil && s.AuditErr == nil {
		return // audit off, or not run yet
	}
	gauge(p.auditOK, boolFloat(s.AuditErr == nil))
	a := s.Audit
	if a == nil {
		return
	}
	gauge(p.runtimeStep, boolFloat(a.RuntimeStep()))
	if m := a.MakeStep; m != nil {
		gauge(p.stepThresh, m.Threshold)
		gauge(p.stepLimit, float64(max(m.Limit, -1)))
	}
	gauge(p.maxSlew, a.MaxSlewRate)
}
