package announce

import (
	"github.com/prometheus/client_golang/prometheus"

	"github.com/clockwatch/clockwatch/internal/policy"
	"github.com/clockwatch/clockwatch/stepdown"
)

// Metric names, shared with the tests and docs/metrics.md. They keep the
// stepdown_ prefix they had when the socket owned the announcer: dashboards
// and alerts read them.
const (
	MetricState  = "clockwatch_stepdown_state"
	MetricEpoch  = "clockwatch_stepdown_epoch"
	MetricEvents = "clockwatch_stepdown_events_total"
)

var allStates = []stepdown.State{stepdown.StateOK, stepdown.StateStepdown, stepdown.StateUnknown}

// metrics implements prometheus.Collector for an Announcer.
type metrics struct {
	a      *Announcer
	state  *prometheus.Desc
	epoch  *prometheus.Desc
	events *prometheus.CounterVec
}

func newMetrics(a *Announcer) *metrics {
	m := &metrics{
		a: a,
		state: prometheus.NewDesc(MetricState,
			"Stepdown state announced to clients: 1 for the current state, 0 for the others.", []string{"state"}, nil),
		epoch: prometheus.NewDesc(MetricEpoch, "Clock epoch announced to stepdown clients (counts clock steps, persisted).", nil, nil),
		events: prometheus.NewCounterVec(prometheus.CounterOpts{Name: MetricEvents,
			Help: "Stepdown and resume events announced, by type and reason (each is sent to every subscriber)."},
			[]string{"type", "reason", "drill"}),
	}
	// Every real trigger's series exists from the start at 0, so that
	// increase() in an alert sees its first event (drills stay lazy).
	for _, r := range stepdown.TriggerReasons() {
		m.events.WithLabelValues(stepdown.TypeStepdown, string(r), "false")
		m.events.WithLabelValues(stepdown.TypeResume, string(r), "false")
	}
	m.events.WithLabelValues(stepdown.TypeResume, string(stepdown.ReasonStarting), "false")
	return m
}

func (m *metrics) count(e policy.Event) {
	drill := "false"
	if e.Drill {
		drill = "true"
	}
	m.events.WithLabelValues(e.Type, string(e.Reason), drill).Inc()
}

// Collector returns the announcer's metrics: the state, the epoch and the
// events announced.
func (a *Announcer) Collector() prometheus.Collector { return a.met }

// Describe implements prometheus.Collector.
func (m *metrics) Describe(ch chan<- *prometheus.Desc) {
	ch <- m.state
	ch <- m.epoch
	m.events.Describe(ch)
}

// Collect implements prometheus.Collector.
func (m *metrics) Collect(ch chan<- prometheus.Metric) {
	st := m.a.Latest().Status
	for _, s := range allStates {
		v := 0.0
		if s == st.State {
			v = 1
		}
		ch <- prometheus.MustNewConstMetric(m.state, prometheus.GaugeValue, v, string(s))
	}
	ch <- prometheus.MustNewConstMetric(m.epoch, prometheus.GaugeValue, float64(st.Epoch))
	m.events.Collect(ch)
}
