package exporter

import (
	"slices"
	"strconv"
	"sync"
	"time"

	"github.com/clockwatch/clockwatch/internal/probe/ptp"
	"github.com/prometheus/client_golang/prometheus"
	dto "github.com/prometheus/client_model/go"
)

// Metric names of the ptp4l source.
const (
	MetricPtp4lUp           = "clockwatch_ptp4l_up"
	MetricPtp4lPolls        = "clockwatch_ptp4l_polls_total"
	MetricPtp4lPollFailures = "clockwatch_ptp4l_poll_failures_total"
	MetricPtp4lPollAge      = "clockwatch_ptp4l_poll_age_seconds"
	MetricPtp4lPollDuration = "clockwatch_ptp4l_poll_duration_seconds"

	MetricPtp4lInfo          = "clockwatch_ptp4l_info"
	MetricPtp4lPortInfo      = "clockwatch_ptp4l_port_info"
	MetricPtp4lStateAge      = "clockwatch_ptp4l_state_age_seconds"
	MetricPtp4lSynchronized  = "clockwatch_ptp4l_synchronized"
	MetricPtp4lIsGrandmaster = "clockwatch_ptp4l_is_grandmaster"
	MetricPtp4lClockClass    = "clockwatch_ptp4l_clock_class"
	MetricPtp4lOffset        = "clockwatch_ptp4l_offset_from_master_seconds"
	MetricPtp4lMeanPathDelay = "clockwatch_ptp4l_mean_path_delay_seconds"
	MetricPtp4lErrorBound    = "clockwatch_ptp4l_clock_error_bound_seconds"
	MetricPtp4lStepsRemoved  = "clockwatch_ptp4l_steps_removed"
	MetricPtp4lGMInfo        = "clockwatch_ptp4l_grandmaster_info"
	MetricPtp4lGMClockClass  = "clockwatch_ptp4l_grandmaster_clock_class"
	MetricPtp4lGMAccuracy    = "clockwatch_ptp4l_grandmaster_clock_accuracy_seconds"
	MetricPtp4lGMChanges     = "clockwatch_ptp4l_grandmaster_changes_total"
	MetricPtp4lTimeTraceable = "clockwatch_ptp4l_time_traceable"
	MetricPtp4lFreqTraceable = "clockwatch_ptp4l_frequency_traceable"
	MetricPtp4lUTCOffset     = "clockwatch_ptp4l_utc_offset_seconds"
	MetricPtp4lLeapStatus    = "clockwatch_ptp4l_leap_status"
)

// Ptp4lSnapshotter gives the ptp4l poller's last result; *ptp.Poller fits.
type Ptp4lSnapshotter = Snapshotter[ptp.Snapshot]

var _ Ptp4lSnapshotter = (*ptp.Poller)(nil)

// Ptp4lCollector exports the ptp4l poller's last snapshot. It is a plain
// prometheus.Collector, not an Updater, because an absent ptp4l (address
// "auto", no socket) must export nothing at all, not an up of 0: most nodes
// run no PTP. Once ptp4l was found, or when its address is pinned, up and
// the counters are always there.
type Ptp4lCollector struct {
	src Ptp4lSnapshotter
	now func() time.Time

	up, polls, failures, age, duration, info, portInfo, stateAge, synced, isGM, class, offset, delay,
	errorBound, steps, gmInfo, gmClass, gmAccuracy, gmChanges, timeTraceable, freqTraceable, utcOffset,
	leap *prometheus.Desc

	// mu guards the label pairs kept between scrapes: rebuilt only when
	// their values change (they rarely do).
	mu sync.Mutex
	ls ptp4lLabels
}

var _ prometheus.Collector = (*Ptp4lCollector)(nil)

// ptp4lLabels are the label pairs of the info series and what they were
// built from.
type ptp4lLabels struct {
	clockID      string
	domain       int
	info         []*dto.LabelPair
	gmID, parent string
	gm           []*dto.LabelPair
	ports        []ptp.Port
	portLs       [][]*dto.LabelPair
}

// update rebuilds what d changed.
func (l *ptp4lLabels) update(d *ptp.Data) {
	if l.info == nil || l.clockID != d.ClockIdentity || l.domain != d.Domain {
		l.clockID, l.domain = d.ClockIdentity, d.Domain
		l.info = labelPairs(ptp4lInfoLabels, d.ClockIdentity, strconv.Itoa(d.Domain))
	}
	if l.gm == nil || l.gmID != d.GrandmasterIdentity || l.parent != d.ParentPort {
		l.gmID, l.parent = d.GrandmasterIdentity, d.ParentPort
		l.gm = labelPairs(ptp4lGMLabels, d.GrandmasterIdentity, d.ParentPort)
	}
	if l.portLs == nil || !slices.Equal(l.ports, d.Ports) {
		l.ports = slices.Clone(d.Ports)
		l.portLs = make([][]*dto.LabelPair, len(d.Ports))
		for i, p := range d.Ports {
			l.portLs[i] = labelPairs(ptp4lPortLabels, strconv.Itoa(p.Number), p.Interface, ptp.StateName(p.State), p.Timestamping)
		}
	}
}

var (
	ptp4lInfoLabels = []string{"clock_identity", "domain"}
	ptp4lPortLabels = []string{"port", "interface", "state", "timestamping"}
	ptp4lGMLabels   = []string{"grandmaster_identity", "parent_port"}
)

// ptp4lMetricsFixed is how many series there are besides one per port.
const ptp4lMetricsFixed = 24

// NewPtp4lCollector exports what src keeps.
func NewPtp4lCollector(src Ptp4lSnapshotter) *Ptp4lCollector {
	return &Ptp4lCollector{
		src:           src,
		now:           time.Now,
		up:            desc(MetricPtp4lUp, "Whether the last poll of ptp4l's management socket succeeded (1) or not (0); absent while ptp4l was never found at its default socket."),
		polls:         desc(MetricPtp4lPolls, "Polls of ptp4l since clockwatch started."),
		failures:      desc(MetricPtp4lPollFailures, "Polls of ptp4l that failed."),
		age:           desc(MetricPtp4lPollAge, "Time since the last successful poll of ptp4l."),
		duration:      desc(MetricPtp4lPollDuration, "How long the last poll of ptp4l took."),
		info:          desc(MetricPtp4lInfo, "This PTP clock's identity and domain.", ptp4lInfoLabels...),
		portInfo:      desc(MetricPtp4lPortInfo, "One series per PTP port with its state (SLAVE, UNCALIBRATED, MASTER, LISTENING, ...) and timestamping.", ptp4lPortLabels...),
		stateAge:      desc(MetricPtp4lStateAge, "Time since the clock's port state (its best port's: SLAVE before UNCALIBRATED before MASTER) last changed, as seen by clockwatch's polls."),
		synced:        desc(MetricPtp4lSynchronized, "Whether ptp4l is synchronised: a port in SLAVE, or a grandmaster traceable to a primary reference."),
		isGM:          desc(MetricPtp4lIsGrandmaster, "Whether this clock is the grandmaster of its domain."),
		class:         desc(MetricPtp4lClockClass, "This clock's own clock class (248 default, 255 slave-only, 6 locked to a primary reference)."),
		offset:        desc(MetricPtp4lOffset, "This clock minus the master's (positive: this clock is ahead), ptp4l's offsetFromMaster. With hardware timestamping it is the PHC's offset."),
		delay:         desc(MetricPtp4lMeanPathDelay, "Mean one-way path delay to the master (half the round trip)."),
		errorBound:    desc(MetricPtp4lErrorBound, "Largest error of this clock that ptp4l's figures allow: |offset| + mean path delay + the grandmaster's announced accuracy."),
		steps:         desc(MetricPtp4lStepsRemoved, "Number of boundary clocks between this clock and the grandmaster, plus one."),
		gmInfo:        desc(MetricPtp4lGMInfo, "The grandmaster and the master port this clock follows.", ptp4lGMLabels...),
		gmClass:       desc(MetricPtp4lGMClockClass, "The grandmaster's announced clock class."),
		gmAccuracy:    desc(MetricPtp4lGMAccuracy, "The grandmaster's announced clock accuracy; absent when it announces unknown (0xFE)."),
		gmChanges:     desc(MetricPtp4lGMChanges, "Changes from one grandmaster to another since clockwatch started (losing the master and finding the same one again is not a change)."),
		timeTraceable: desc(MetricPtp4lTimeTraceable, "Whether the grandmaster says its time is traceable to a primary reference."),
		freqTraceable: desc(MetricPtp4lFreqTraceable, "Whether the grandmaster says its frequency is traceable to a primary reference."),
		utcOffset:     desc(MetricPtp4lUTCOffset, "TAI minus UTC as the grandmaster announces it (currentUtcOffset)."),
		leap:          desc(MetricPtp4lLeapStatus, "Leap second the grandmaster announces for the end of the UTC day: 0 none, 1 insert (leap61), 2 delete (leap59)."),
	}
}

// Describe implements prometheus.Collector.
func (c *Ptp4lCollector) Describe(ch chan<- *prometheus.Desc) {
	for _, d := range []*prometheus.Desc{c.up, c.polls, c.failures, c.age, c.duration, c.info, c.portInfo, c.stateAge,
		c.synced, c.isGM, c.class, c.offset, c.delay, c.errorBound, c.steps, c.gmInfo, c.gmClass, c.gmAccuracy,
		c.gmChanges, c.timeTraceable, c.freqTraceable, c.utcOffset, c.leap} {
		ch <- d
	}
}

// Collect implements prometheus.Collector: nothing while ptp4l is absent;
// up and counters once found; ptp4l's figures while it answers.
func (c *Ptp4lCollector) Collect(ch chan<- prometheus.Metric) {
	s := c.src.Snapshot()
	if !s.Found {
		return
	}
	b := newMetricBatch(ptp4lMetricsFixed + len(s.Data.Ports))
	gauge := func(d *prometheus.Desc, v float64) { ch <- b.next(d, prometheus.GaugeValue, v, nil) }
	counter := func(d *prometheus.Desc, v uint64) { ch <- b.next(d, prometheus.CounterValue, float64(v), nil) }
	gauge(c.up, boolFloat(s.Up))
	counter(c.polls, s.Polls)
	counter(c.failures, s.Failures)
	counter(c.gmChanges, s.GrandmasterChanges)
	if s.Polls > 0 {
		gauge(c.duration, s.PollDuration.Seconds())
	}
	if !s.HaveData {
		return
	}
	gauge(c.age, c.now().Sub(s.LastSuccess).Seconds())
	if !s.Up {
		return
	}
	d := &s.Data
	r := d.Solution()
	c.mu.Lock()
	c.ls.update(d)
	info, gm, ports := c.ls.info, c.ls.gm, c.ls.portLs
	c.mu.Unlock()
	ch <- b.next(c.info, prometheus.GaugeValue, 1, info)
	for _, ls := range ports {
		ch <- b.next(c.portInfo, prometheus.GaugeValue, 1, ls)
	}
	gauge(c.stateAge, c.now().Sub(s.StateSince).Seconds())
	gauge(c.synced, boolFloat(r.Synchronized))
	gauge(c.isGM, boolFloat(d.Grandmaster()))
	gauge(c.class, float64(d.ClockClass))
	if r.HasData && !d.Grandmaster() {
		gauge(c.offset, d.OffsetFromMaster.Seconds())
		gauge(c.delay, d.MeanPathDelay.Seconds())
	}
	if r.HasData {
		gauge(c.errorBound, r.ErrorBound.Seconds())
	}
	gauge(c.steps, float64(d.StepsRemoved))
	ch <- b.next(c.gmInfo, prometheus.GaugeValue, 1, gm)
	gauge(c.gmClass, float64(d.GrandmasterClockClass))
	if a := ptp.Accuracy(d.GrandmasterClockAccuracy); a > 0 {
		gauge(c.gmAccuracy, a.Seconds())
	}
	gauge(c.timeTraceable, boolFloat(d.Time.TimeTraceable))
	gauge(c.freqTraceable, boolFloat(d.Time.FrequencyTraceable))
	gauge(c.utcOffset, float64(d.Time.CurrentUTCOffset))
	leap := 0.0
	switch {
	case d.Time.Leap61:
		leap = 1
	case d.Time.Leap59:
		leap = 2
	}
	gauge(c.leap, leap)
}
