package exporter

import (
	"log/slog"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	dto "github.com/prometheus/client_model/go"
)

// Metric names of the scrape machinery.
const (
	MetricCollectorSuccess  = "clockwatch_scrape_collector_success"
	MetricCollectorDuration = "clockwatch_scrape_collector_duration_seconds"
)

// Updater sends a set of metrics at each scrape, under the Scraper, which
// adds what every Updater shares (node_exporter's Collector).
type Updater interface {
	// Name is short and stable: it becomes the collector label and the
	// clockwatch_<name>_up metric.
	Name() string
	Describe(ch chan<- *prometheus.Desc)
	// Update sends the updater's metrics. On error it may have sent some; up
	// and success report 0.
	Update(ch chan<- prometheus.Metric) error
}

// Absenter is implemented by an Updater that can be absent: a daemon found by
// "auto" that is not there (ntpd). While Absent, the Scraper exports
// nothing for it, not even clockwatch_<name>_up 0: an absent source
// raises nothing.
type Absenter interface {
	Absent() bool
}

// Scraper runs updaters on every scrape and reports for each whether it
// worked (clockwatch_<name>_up and clockwatch_scrape_collector_success) and
// how long it took.
type Scraper struct {
	updaters []Updater
	up       []*prometheus.Desc
	labels   [][]*dto.LabelPair // collector="<updater name>", built once
	success  *prometheus.Desc
	duration *prometheus.Desc
	logger   *slog.Logger
}

var _ prometheus.Collector = (*Scraper)(nil)

// NewScraper wraps updaters; failures are logged at debug level (the metric
// is the signal, and a broken updater would otherwise log on every scrape).
func NewScraper(logger *slog.Logger, updaters ...Updater) *Scraper {
	s := &Scraper{
		updaters: updaters,
		success: prometheus.NewDesc(MetricCollectorSuccess,
			"Whether the collector's last scrape succeeded (1) or failed (0).", []string{"collector"}, nil),
		duration: prometheus.NewDesc(MetricCollectorDuration,
			"How long the collector's last scrape took.", []string{"collector"}, nil),
		logger: logger,
	}
	for _, u := range updaters {
		s.up = append(s.up, prometheus.NewDesc("clockwatch_"+u.Name()+"_up",
			"Whether the "+u.Name()+" probe could be read (1) or not (0).", nil, nil))
		s.labels = append(s.labels, labelPairs([]string{"collector"}, u.Name()))
	}
	return s
}

// Describe implements prometheus.Collector.
func (s *Scraper) Describe(ch chan<- *prometheus.Desc) {
	ch <- s.success
	ch <- s.duration
	for i, u := range s.updaters {
		ch <- s.up[i]
		u.Describe(ch)
	}
}

// Collect implements prometheus.Collector.
func (s *Scraper) Collect(ch chan<- prometheus.Metric) {
	b := newMetricBatch(3 * len(s.updaters))
	for i, u := range s.updaters {
		if a, ok := u.(Absenter); ok && a.Absent() {
			continue
		}
		start := time.Now()
		err := u.Update(ch)
		ok := 1.0
		if err != nil {
			ok = 0
			s.logger.Debug("scrape failed", "collector", u.Name(), "err", err)
		}
		ch <- b.next(s.duration, prometheus.GaugeValue, time.Since(start).Seconds(), s.labels[i])
		ch <- b.next(s.success, prometheus.GaugeValue, ok, s.labels[i])
		ch <- b.next(s.up[i], prometheus.GaugeValue, ok, nil)
	}
}
