package exporter

import (
	"net/http"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/collectors"
	versioncollector "github.com/prometheus/client_golang/prometheus/collectors/version"
	"github.com/prometheus/client_golang/prometheus/promhttp"
)

// Metric names of the agent's own state.
const (
	MetricBuildInfo             = "clockwatch_build_info"
	MetricConfigReloadOK        = "clockwatch_config_last_reload_successful"
	MetricConfigReloadTimestamp = "clockwatch_config_last_reload_success_timestamp_seconds"
)

// NewRegistry returns the daemon's registry holding the build info, process
// and Go runtime metrics, and the given collectors. It is not pedantic: the
// pedantic registry checks every metric of every scrape against its
// collector's Describe, a fifth of a scrape's CPU for a check whose answer
// never changes in production; the tests run the same collectors through
// NewPedanticRegistry.
func NewRegistry(cs ...prometheus.Collector) (*prometheus.Registry, error) {
	return register(prometheus.NewRegistry(), cs)
}

func register(reg *prometheus.Registry, cs []prometheus.Collector) (*prometheus.Registry, error) {
	cs = append([]prometheus.Collector{
		versioncollector.NewCollector("clockwatch"),
		NewProcessCollector(),
		collectors.NewGoCollector(),
	}, cs...)
	for _, c := range cs {
		if err := reg.Register(c); err != nil {
			return nil, err
		}
	}
	return reg, nil
}

// MaxScrapesInFlight is how many /metrics requests are served at once, as
// node_exporter's --web.max-requests default; more get 503.
const MaxScrapesInFlight = 40

// MetricsHandler serves reg in the text format, or OpenMetrics when the
// scraper asks for it. Up to MaxScrapesInFlight requests are served at
// once (a pair of Prometheus servers scrape together), and requests that
// arrive while a gather is under way share its result: N concurrent scrapes
// collect once. No collector waits on anything (the time daemons' figures are
// snapshots kept by their pollers), so there is no per-request timeout
// goroutine: the HTTP server's own timeouts bound a slow client.
func MetricsHandler(reg prometheus.Gatherer, errorLog promhttp.Logger) http.Handler {
	return promhttp.HandlerFor(reg, promhttp.HandlerOpts{
		ErrorLog:            errorLog,
		ErrorHandling:       promhttp.ContinueOnError,
		EnableOpenMetrics:   true,
		MaxRequestsInFlight: MaxScrapesInFlight,
		CoalesceGather:      true,
	})
}

// ReloadMetrics reports configuration reloads.
type ReloadMetrics struct {
	ok        prometheus.Gauge
	timestamp prometheus.Gauge
}

// NewReloadMetrics starts as a successful load at now: the daemon does not
// start on a bad configuration.
func NewReloadMetrics(now time.Time) *ReloadMetrics {
	m := &ReloadMetrics{
		ok: prometheus.NewGauge(prometheus.GaugeOpts{Name: MetricConfigReloadOK,
			Help: "Whether the last configuration load or reload succeeded (1) or was refused (0)."}),
		timestamp: prometheus.NewGauge(prometheus.GaugeOpts{Name: MetricConfigReloadTimestamp,
			Help: "When the configuration was last loaded successfully, in seconds since the epoch."}),
	}
	m.Record(true, now)
	return m
}

// Record notes the outcome of a reload.
func (m *ReloadMetrics) Record(ok bool, now time.Time) {
	if ok {
		m.ok.Set(1)
		m.timestamp.Set(float64(now.UnixNano()) / 1e9)
		return
	}
	m.ok.Set(0)
}

// Describe implements prometheus.Collector.
func (m *ReloadMetrics) Describe(ch chan<- *prometheus.Desc) {
	m.ok.Describe(ch)
	m.timestamp.Describe(ch)
}

// Collect implements prometheus.Collector.
func (m *ReloadMetrics) Collect(ch chan<- prometheus.Metric) {
	m.ok.Collect(ch)
	m.timestamp.Collect(ch)
}
