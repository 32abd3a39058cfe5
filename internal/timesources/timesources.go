package timesources

import (
	"context"
	"log/slog"
	"sort"

	"github.com/clockwatch/clockwatch/internal/exporter"
	"github.com/clockwatch/clockwatch/internal/probe/chrony"
	"github.com/clockwatch/clockwatch/internal/probe/ntpd"
	"github.com/clockwatch/clockwatch/internal/probe/ptp"
	"github.com/clockwatch/clockwatch/internal/probe/sntp"
	"github.com/clockwatch/clockwatch/internal/probe/timesyncd"
	"github.com/clockwatch/clockwatch/internal/timesource"
	"github.com/prometheus/client_golang/prometheus"
	"golang.org/x/sync/errgroup"
)

// Sources holds the pollers that are enabled. A nil field is turned off.
type Sources struct {
	// Chrony is the chrony poller.
	Chrony *chrony.Poller
	// ChronyServer reads chronyd's server side (nil when chrony or
	// chrony.server_stats is off).
	ChronyServer *chrony.ServerPoller
	// Ntpd is the ntpd poller.
	Ntpd *ntpd.Poller
	// NTPProbes is the independent SNTP prober (nil without servers).
	NTPProbes *sntp.Prober
	// probeRole is what the probes' readings may do (ntp_probes.role).
	probeRole timesource.Role
	// PTP is the ptp4l poller (see EnablePTP).
	PTP *ptp.Poller
	// Timesyncd is the systemd-timesyncd poller (see EnableTimesyncd).
	Timesyncd *timesyncd.Poller
}

// EnablePTP adds the ptp4l poller when cfg enables it. With the address
// "auto" and no ptp4l it costs one stat a poll and exports nothing.
func (s *Sources) EnablePTP(cfg ptp.Config, logger *slog.Logger) {
	if cfg.Enabled {
		s.PTP = ptp.NewPoller(cfg, logger.With("probe", ptp.SourceName))
	}
}

// EnableTimesyncd adds the timesyncd poller unless its mode is off. In mode
// auto without timesyncd it costs one failed D-Bus call a poll and exports
// up 0 and found 0.
func (s *Sources) EnableTimesyncd(cfg timesyncd.Config, logger *slog.Logger) {
	if cfg.Enabled() {
		s.Timesyncd = timesyncd.NewPoller(cfg, logger.With("probe", timesyncd.SourceName))
	}
}

// New builds the enabled pollers. The configurations must be valid.
func New(c chrony.Config, n ntpd.Config, p sntp.Config, logger *slog.Logger) *Sources {
	s := &Sources{probeRole: p.SourceRole()}
	if c.Enabled {
		s.Chrony = chrony.NewPoller(c, logger.With("probe", "chrony"))
		s.ChronyServer = chrony.NewServerPoller(c, logger.With("probe", "chrony_server"))
	}
	if n.Enabled {
		s.Ntpd = ntpd.NewPoller(n, logger.With("probe", "ntpd"))
	}
	if len(p.Servers) > 0 {
		s.NTPProbes = sntp.NewProber(p, logger.With("probe", "ntp_probes"))
	}
	return s
}

// TimeSources returns the enabled sources that produce timesource
// readings, for health and the stepdown policy.
func (s *Sources) TimeSources() []timesource.Source {
	var out []timesource.Source
	if s.PTP != nil {
		out = append(out, s.PTP)
	}
	if s.Timesyncd != nil {
		out = append(out, s.Timesyncd)
	}
	return out
}

// Probes returns the probes for exporter.NewScraper (which adds
// clockwatch_chrony_up and clockwatch_ntpd_up).
func (s *Sources) Probes() []exporter.Probe {
	var ps []exporter.Probe
	if s.Chrony != nil {
		ps = append(ps, exporter.NewChronyProbe(s.Chrony))
	}
	if s.Ntpd != nil {
		ps = append(ps, exporter.NewNtpdProbe(s.Ntpd))
	}
	return ps
}

// Collectors returns the collectors to register beside the Scraper.
func (s *Sources) Collectors() []prometheus.Collector {
	var cs []prometheus.Collector
	if s.ChronyServer != nil {
		cs = append(cs, exporter.NewChronyServerCollector(s.ChronyServer))
	}
	if s.NTPProbes != nil {
		cs = append(cs, exporter.NewNTPProbeCollector(s.NTPProbes))
	}
	if s.PTP != nil {
		cs = append(cs, exporter.NewPtp4lCollector(s.PTP))
	}
	if s.Timesyncd != nil {
		cs = append(cs, exporter.NewTimesyncdCollector(s.Timesyncd))
	}
	return cs
}

// Sources returns the enabled sources that produce normalised readings,
// by name.
func (s *Sources) Sources() map[string]timesource.Source {
	m := map[string]timesource.Source{}
	if s.Chrony != nil {
		m[chrony.SourceName] = s.Chrony
	}
	if s.Ntpd != nil {
		m[ntpd.SourceName] = s.Ntpd
	}
	if s.PTP != nil {
		m[ptp.SourceName] = s.PTP
	}
	if s.Timesyncd != nil {
		m[timesyncd.SourceName] = s.Timesyncd
	}
	return m
}

// Names returns the names of the enabled authoritative sources, sorted:
// those whose first poll the stepdown state waits for (second opinions
// cannot step anyone down, so the start does not wait for them).
func (s *Sources) Names() []string {
	var names []string
	for n := range s.Sources() {
		names = append(names, n)
	}
	if s.NTPProbes != nil && s.probeRole == timesource.Authoritative {
		for _, r := range s.NTPProbes.Readings() {
			names = append(names, r.Source)
		}
	}
	sort.Strings(names)
	return names
}

// Readings returns the last reading of every enabled source, the probed
// NTP servers included; it never waits on a daemon.
func (s *Sources) Readings() timesource.Set {
	set := timesource.Set{}
	for n, src := range s.Sources() {
		set[n] = src.Reading()
	}
	if s.NTPProbes != nil {
		for _, r := range s.NTPProbes.Readings() {
			set[r.Source] = r
		}
	}
	return set
}

// Notes returns what the enabled sources' rich data shows beyond their
// readings (timesource.Noter), for health.
func (s *Sources) Notes() []timesource.Note {
	var ns []timesource.Note
	for _, n := range s.Names() {
		if nt, ok := s.Sources()[n].(timesource.Noter); ok {
			ns = append(ns, nt.Notes()...)
		}
	}
	return ns
}

// Run runs every enabled poller until ctx is done. The pollers never fail
// on their own (a time daemon being away is a state they report), so Run
// returns nil on cancellation.
func (s *Sources) Run(ctx context.Context) error {
	g, ctx := errgroup.WithContext(ctx)
	if s.Chrony != nil {
		g.Go(func() error { return s.Chrony.Run(ctx) })
	}
	if s.ChronyServer != nil {
		g.Go(func() error { return s.ChronyServer.Run(ctx) })
	}
	if s.Ntpd != nil {
		g.Go(func() error { return s.Ntpd.Run(ctx) })
	}
	if s.NTPProbes != nil {
		g.Go(func() error { return s.NTPProbes.Run(ctx) })
	}
	if s.PTP != nil {
		g.Go(func() error { return s.PTP.Run(ctx) })
	}
	if s.Timesyncd != nil {
		g.Go(func() error { return s.Timesyncd.Run(ctx) })
	}
	return g.Wait()
}
