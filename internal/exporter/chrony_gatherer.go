package exporter

import (
	"sync"
	"time"

	"github.com/clockwatch/clockwatch/internal/probe/chrony"
	"github.com/prometheus/client_golang/prometheus"
	dto "github.com/prometheus/client_model/go"
)

// Gatherer returns the updater's figures as a Gatherer that gathers them
// again only when the poller has a new snapshot: between polls (seconds
// apart) a scrape reuses the families gathered at the first scrape after
// the poll, with the ages (which grow) moved on by the time since. Merge it
// with the registry (MergeGatherers); from the first call on, Update sends
// nothing (the Scraper still exports clockwatch_chrony_up from its error).
func (p *ChronyUpdater) Gatherer() prometheus.Gatherer {
	p.split.Store(true)
	g := &chronyGatherer{p: p, reg: prometheus.NewRegistry()}
	g.reg.MustRegister(collectorFunc(func(ch chan<- prometheus.Metric) { p.update(ch, g.snap, true, true) }))
	return g
}

// chronyGatherer is ChronyUpdater.Gatherer's result.
type chronyGatherer struct {
	p   *ChronyUpdater
	reg *prometheus.Registry

	mu     sync.Mutex
	snap   chrony.Snapshot // the snapshot being gathered, under mu
	key    snapshotKey
	at     time.Time           // when cached was gathered (p.now)
	cached []*dto.MetricFamily // never modified once gathered: scrapes share them
}

// snapshotKey tells snapshots apart: every poll and every audit makes a
// new one.
type snapshotKey struct {
	polls    uint64
	audit    *chrony.Audit
	auditErr error
}

// Gather implements prometheus.Gatherer.
func (g *chronyGatherer) Gather() ([]*dto.MetricFamily, error) {
	g.mu.Lock()
	defer g.mu.Unlock()
	s := g.p.src.Snapshot()
	k := snapshotKey{s.Polls, s.Audit, s.AuditErr}
	if g.cached == nil || k != g.key {
		g.snap, g.at = s, g.p.now()
		mfs, err := g.reg.Gather()
		if err != nil {
			g.cached = nil // gather again next time
			return mfs, err
		}
		g.cached, g.key = mfs, k
	}
	elapsed := g.p.now().Sub(g.at).Seconds()
	out := make([]*dto.MetricFamily, len(g.cached))
	for i, mf := range g.cached {
		out[i] = mf
		if n := mf.GetName(); elapsed != 0 && (n == MetricChronyPollAge || n == MetricChronySourceLastSampleAge) {
			out[i] = aged(mf, elapsed)
		}
	}
	return out, nil
}

// aged returns a copy of a family of gauges with every value plus d (the
// label pairs are shared: they are never modified).
func aged(mf *dto.MetricFamily, d float64) *dto.MetricFamily {
	c := &dto.MetricFamily{Name: mf.Name, Help: mf.Help, Type: mf.Type, Metric: make([]*dto.Metric, len(mf.Metric))}
	ms := make([]dto.Metric, len(mf.Metric))
	gs := make([]dto.Gauge, len(mf.Metric))
	vs := make([]float64, len(mf.Metric))
	for i, m := range mf.Metric {
		vs[i] = m.GetGauge().GetValue() + d
		gs[i].Value = &vs[i]
		ms[i].Label, ms[i].Gauge = m.Label, &gs[i]
		c.Metric[i] = &ms[i]
	}
	return c
}

// collectorFunc is an unchecked collector (no Describe) calling f.
type collectorFunc func(ch chan<- prometheus.Metric)

func (f collectorFunc) Describe(chan<- *prometheus.Desc)    {}
func (f collectorFunc) Collect(ch chan<- prometheus.Metric) { f(ch) }
