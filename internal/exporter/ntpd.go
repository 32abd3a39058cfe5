package exporter

import (
	"errors"
	"fmt"
	"math/bits"
	"strconv"
	"time"

	"github.com/clockwatch/clockwatch/internal/probe/ntpd"
	"github.com/prometheus/client_golang/prometheus"
)

// Metric names of the NtpdUpdater, shaped like the chrony ones where the
// meaning is the same. clockwatch_ntpd_up comes from the Scraper.
const (
	MetricNtpdPolls          = "clockwatch_ntpd_polls_total"
	MetricNtpdPollFailures   = "clockwatch_ntpd_poll_failures_total"
	MetricNtpdPollAge        = "clockwatch_ntpd_poll_age_seconds"
	MetricNtpdInfo           = "clockwatch_ntpd_info"
	MetricNtpdStratum        = "clockwatch_ntpd_stratum"
	MetricNtpdLeapStatus     = "clockwatch_ntpd_leap_status"
	MetricNtpdSynchronized   = "clockwatch_ntpd_synchronized"
	MetricNtpdOffset         = "clockwatch_ntpd_offset_seconds"
	MetricNtpdSysJitter      = "clockwatch_ntpd_sys_jitter_seconds"
	MetricNtpdClockJitter    = "clockwatch_ntpd_clock_jitter_seconds"
	MetricNtpdFrequency      = "clockwatch_ntpd_frequency_ratio"
	MetricNtpdRootDelay      = "clockwatch_ntpd_root_delay_seconds"
	MetricNtpdRootDispersion = "clockwatch_ntpd_root_dispersion_seconds"
	MetricNtpdErrorBound     = "clockwatch_ntpd_clock_error_bound_seconds"

	MetricNtpdPeerInfo         = "clockwatch_ntpd_peer_info"
	MetricNtpdPeerStratum      = "clockwatch_ntpd_peer_stratum"
	MetricNtpdPeerReach        = "clockwatch_ntpd_peer_reach_register"
	MetricNtpdPeerReachability = "clockwatch_ntpd_peer_reachability_ratio"
	MetricNtpdPeerPoll         = "clockwatch_ntpd_peer_poll_interval_seconds"
	MetricNtpdPeerOffset       = "clockwatch_ntpd_peer_offset_seconds"
	MetricNtpdPeerDelay        = "clockwatch_ntpd_peer_delay_seconds"
	MetricNtpdPeerJitter       = "clockwatch_ntpd_peer_jitter_seconds"
	MetricNtpdPeerDispersion   = "clockwatch_ntpd_peer_dispersion_seconds"
)

// NtpdSnapshotter gives the ntpd poller's last result; *ntpd.Poller fits.
type NtpdSnapshotter = Snapshotter[ntpd.Snapshot]

var _ NtpdSnapshotter = (*ntpd.Poller)(nil)

var errNtpdNotPolled = errors.New("ntpd has not been polled yet")

// NtpdUpdater exports the ntpd poller's last snapshot.
type NtpdUpdater struct {
	src NtpdSnapshotter
	now func() time.Time

	polls, failures, age, info, stratum, leap, synced, offset, sysJitter, clkJitter, freq,
	rootDelay, rootDisp, errorBound,
	peerInfo, peerStratum, peerReach, peerReachRatio, peerPoll, peerOffset, peerDelay, peerJitter, peerDisp *prometheus.Desc
}

var _ Updater = (*NtpdUpdater)(nil)

// NewNtpdUpdater exports what src keeps.
func NewNtpdUpdater(src NtpdSnapshotter) *NtpdUpdater {
	p := func(name, help string) *prometheus.Desc { return desc(name, help, "association", "address") }
	return &NtpdUpdater{
		src:            src,
		now:            time.Now,
		polls:          desc(MetricNtpdPolls, "Polls of ntpd since clockwatch started."),
		failures:       desc(MetricNtpdPollFailures, "Polls of ntpd that failed."),
		age:            desc(MetricNtpdPollAge, "Time since the last successful poll of ntpd."),
		info:           desc(MetricNtpdInfo, "ntpd's version and reference ID.", "version", "ref_id"),
		stratum:        desc(MetricNtpdStratum, "ntpd's stratum (16: not synchronised)."),
		leap:           desc(MetricNtpdLeapStatus, "ntpd's leap indicator: 0 normal, 1 insert second, 2 delete second, 3 not synchronised."),
		synced:         desc(MetricNtpdSynchronized, "Whether ntpd is synchronised (leap indicator not 3, stratum below 16)."),
		offset:         desc(MetricNtpdOffset, "Local clock minus true time as ntpd estimates it (positive: the clock is ahead; ntpd's offset negated)."),
		sysJitter:      desc(MetricNtpdSysJitter, "ntpd's system jitter."),
		clkJitter:      desc(MetricNtpdClockJitter, "ntpd's clock jitter."),
		freq:           desc(MetricNtpdFrequency, "ntpd's frequency correction."),
		rootDelay:      desc(MetricNtpdRootDelay, "Total network path delay to the stratum-1 clock."),
		rootDisp:       desc(MetricNtpdRootDispersion, "Total dispersion to the stratum-1 clock."),
		errorBound:     desc(MetricNtpdErrorBound, "Largest error of the local clock that ntpd's figures allow: |offset| + root dispersion + root delay / 2."),
		peerInfo:       desc(MetricNtpdPeerInfo, "One series per association with its reference ID and selection (sys.peer, candidate, backup, outlier, falsetick, excess, reject, pps.peer).", "association", "address", "ref_id", "selection"),
		peerStratum:    p(MetricNtpdPeerStratum, "Stratum of the peer."),
		peerReach:      p(MetricNtpdPeerReach, "Reach register of the peer (0-255)."),
		peerReachRatio: p(MetricNtpdPeerReachability, "Share of the last 8 polls the peer answered."),
		peerPoll:       p(MetricNtpdPeerPoll, "Interval at which ntpd polls the peer."),
		peerOffset:     p(MetricNtpdPeerOffset, "Local clock minus the peer's (positive: local ahead)."),
		peerDelay:      p(MetricNtpdPeerDelay, "Round-trip delay to the peer."),
		peerJitter:     p(MetricNtpdPeerJitter, "Jitter of the peer's samples."),
		peerDisp:       p(MetricNtpdPeerDispersion, "Dispersion of the peer."),
	}
}

// Name implements Updater.
func (p *NtpdUpdater) Name() string { return "ntpd" }

// Absent implements Absenter: an ntpd that "auto" has not found exports
// nothing.
func (p *NtpdUpdater) Absent() bool { return !p.src.Snapshot().Found }

var _ Absenter = (*NtpdUpdater)(nil)

// Describe implements Updater.
func (p *NtpdUpdater) Describe(ch chan<- *prometheus.Desc) {
	for _, d := range []*prometheus.Desc{p.polls, p.failures, p.age, p.info, p.stratum, p.leap, p.synced, p.offset,
		p.sysJitter, p.clkJitter, p.freq, p.rootDelay, p.rootDisp, p.errorBound, p.peerInfo, p.peerStratum,
		p.peerReach, p.peerReachRatio, p.peerPoll, p.peerOffset, p.peerDelay, p.peerJitter, p.peerDisp} {
		ch <- d
	}
}

// Update implements Updater. Like the ChronyUpdater it leaves out ntpd's
// figures while ntpd does not answer.
func (p *NtpdUpdater) Update(ch chan<- prometheus.Metric) error {
	s := p.src.Snapshot()
	gauge := func(d *prometheus.Desc, v float64, labels ...string) {
		ch <- prometheus.MustNewConstMetric(d, prometheus.GaugeValue, v, labels...)
	}
	ch <- prometheus.MustNewConstMetric(p.polls, prometheus.CounterValue, float64(s.Polls))
	ch <- prometheus.MustNewConstMetric(p.failures, prometheus.CounterValue, float64(s.Failures))
	if s.Polls == 0 {
		return errNtpdNotPolled
	}
	if s.HaveData {
		gauge(p.age, p.now().Sub(s.LastSuccess).Seconds())
	}
	if !s.Up {
		return fmt.Errorf("polling ntpd: %w", s.Err)
	}
	y := s.Data.System
	gauge(p.info, 1, y.Version, y.RefID)
	gauge(p.stratum, float64(y.Stratum))
	gauge(p.leap, float64(y.Leap))
	gauge(p.synced, boolFloat(y.Synchronised()))
	gauge(p.offset, y.Offset)
	gauge(p.sysJitter, y.SysJitter)
	gauge(p.clkJitter, y.ClockJitter)
	gauge(p.freq, y.Frequency)
	gauge(p.rootDelay, y.RootDelay)
	gauge(p.rootDisp, y.RootDispersion)
	gauge(p.errorBound, y.ErrorBound())
	for _, peer := range s.Data.Peers {
		id, a := strconv.Itoa(int(peer.AssociationID)), peer.Address
		gauge(p.peerInfo, 1, id, a, peer.RefID, peer.Selection)
		gauge(p.peerStratum, float64(peer.Stratum), id, a)
		gauge(p.peerReach, float64(peer.Reach), id, a)
		gauge(p.peerReachRatio, float64(bits.OnesCount8(peer.Reach))/8, id, a)
		gauge(p.peerPoll, peer.Poll.Seconds(), id, a)
		gauge(p.peerOffset, peer.Offset, id, a)
		gauge(p.peerDelay, peer.Delay, id, a)
		gauge(p.peerJitter, peer.Jitter, id, a)
		gauge(p.peerDisp, peer.Dispersion, id, a)
	}
	return nil
}
