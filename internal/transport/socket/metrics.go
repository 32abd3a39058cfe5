package socket

import (
	"github.com/prometheus/client_golang/prometheus"

	"github.com/clockwatch/clockwatch/stepdown"
)

// Metric names, shared with the tests and docs/metrics.md.
const (
	MetricSubscribers  = "clockwatch_stepdown_subscribers"
	MetricMessagesSent = "clockwatch_stepdown_messages_sent_total"
	MetricAcks         = "clockwatch_stepdown_acks_total"
	MetricAckLatency   = "clockwatch_stepdown_ack_latency_seconds"
	MetricConnections  = "clockwatch_stepdown_connections_total"
	MetricDisconnects  = "clockwatch_stepdown_disconnects_total"
	MetricDrills       = "clockwatch_stepdown_drills_total"
	MetricClientErrors = "clockwatch_stepdown_client_errors_total"
)

// Disconnect causes, the values of the cause label.
const (
	CauseClientClosed   = "client_closed"
	CauseLaggard        = "laggard"
	CauseWriteError     = "write_error"
	CauseGarbage        = "garbage"
	CauseLineTooLong    = "line_too_long"
	CauseFlood          = "flood"
	CauseNotAllowed     = "not_allowed"
	CauseTooManyClients = "too_many_clients"
	CauseConnectRate    = "connect_rate"
	CauseShutdown       = "shutdown"
)

var allCauses = []string{CauseClientClosed, CauseLaggard, CauseWriteError, CauseGarbage, CauseLineTooLong,
	CauseFlood, CauseNotAllowed, CauseTooManyClients, CauseConnectRate, CauseShutdown}

// metrics implements prometheus.Collector for a Server. The state, the
// epoch and the events are the announcer's (announce.Announcer.Collector).
type metrics struct {
	s *Server

	subscribers  *prometheus.Desc
	messagesSent *prometheus.CounterVec
	acks         prometheus.Counter
	ackLatency   prometheus.Histogram
	connections  prometheus.Counter
	disconnects  *prometheus.CounterVec
	drills       *prometheus.CounterVec
	clientErrors *prometheus.CounterVec
}

func newMetrics(s *Server) *metrics {
	m := &metrics{
		s:           s,
		subscribers: prometheus.NewDesc(MetricSubscribers, "Clients connected to the stepdown socket.", nil, nil),
		messagesSent: prometheus.NewCounterVec(prometheus.CounterOpts{Name: MetricMessagesSent,
			Help: "Messages queued to stepdown clients, by message type."}, []string{"type"}),
		acks: prometheus.NewCounter(prometheus.CounterOpts{Name: MetricAcks,
			Help: "Acks received from stepdown clients for events they were sent."}),
		ackLatency: prometheus.NewHistogram(prometheus.HistogramOpts{Name: MetricAckLatency,
			Help:    "Time from announcing an event to a client's ack of it.",
			Buckets: []float64{.0005, .001, .0025, .005, .01, .025, .05, .1, .25, .5, 1, 2.5, 5, 10, 30}}),
		connections: prometheus.NewCounter(prometheus.CounterOpts{Name: MetricConnections,
			Help: "Connections accepted on the stepdown socket."}),
		disconnects: prometheus.NewCounterVec(prometheus.CounterOpts{Name: MetricDisconnects,
			Help: "Stepdown clients disconnected, by cause."}, []string{"cause"}),
		drills: prometheus.NewCounterVec(prometheus.CounterOpts{Name: MetricDrills,
			Help: "Drill requests, by result (started, forbidden, busy, bad_request)."}, []string{"result"}),
		clientErrors: prometheus.NewCounterVec(prometheus.CounterOpts{Name: MetricClientErrors,
			Help: "Error messages sent to stepdown clients, by code."}, []string{"code"}),
	}
	for _, c := range allCauses {
		m.disconnects.WithLabelValues(c)
	}
	for _, t := range []string{stepdown.TypeHello, stepdown.TypeStepdown, stepdown.TypeResume, stepdown.TypeHeartbeat, stepdown.TypeError} {
		m.messagesSent.WithLabelValues(t)
	}
	for _, r := range []string{"started", "forbidden", "busy", "bad_request"} {
		m.drills.WithLabelValues(r)
	}
	return m
}

// Describe implements prometheus.Collector.
func (m *metrics) Describe(ch chan<- *prometheus.Desc) {
	ch <- m.subscribers
	m.messagesSent.Describe(ch)
	m.acks.Describe(ch)
	m.ackLatency.Describe(ch)
	m.connections.Describe(ch)
	m.disconnects.Describe(ch)
	m.drills.Describe(ch)
	m.clientErrors.Describe(ch)
}

// Collect implements prometheus.Collector.
func (m *metrics) Collect(ch chan<- prometheus.Metric) {
	ch <- prometheus.MustNewConstMetric(m.subscribers, prometheus.GaugeValue, float64(m.s.Subscribers()))
	m.messagesSent.Collect(ch)
	m.acks.Collect(ch)
	m.ackLatency.Collect(ch)
	m.connections.Collect(ch)
	m.disconnects.Collect(ch)
	m.drills.Collect(ch)
	m.clientErrors.Collect(ch)
}
