package timesources

import (
	"context"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/clockwatch/clockwatch/internal/exporter"
	"github.com/clockwatch/clockwatch/internal/kubernetes"
	"github.com/clockwatch/clockwatch/internal/loop"
	"github.com/clockwatch/clockwatch/internal/peers"
	"github.com/clockwatch/clockwatch/internal/probe/chrony"
	"github.com/clockwatch/clockwatch/internal/probe/ntpd"
	"github.com/clockwatch/clockwatch/internal/probe/ptp"
	"github.com/clockwatch/clockwatch/internal/probe/sntp"
	"github.com/clockwatch/clockwatch/internal/probe/timesyncd"
	"github.com/clockwatch/clockwatch/internal/probe/vmclock"
	"github.com/clockwatch/clockwatch/internal/timesource"
)

// Sections are the time sources' sections of the configuration file, one
// field a source, each of the source's own type (its package's Config).
// The configuration embeds them inline, so that each is a top-level
// section (chrony:, ptp:) and the configuration names no source; the
// registry fills their defaults (DefaultSections), validates them
// (Validate) and says which carry their own thresholds (Judged).
type Sections struct {
	Chrony    chrony.Config    `yaml:"chrony"`
	Ntpd      ntpd.Config      `yaml:"ntpd"`
	NTPProbes sntp.Config      `yaml:"ntp_probes"`
	PTP       PTP              `yaml:"ptp"`
	Timesyncd timesyncd.Config `yaml:"timesyncd"`
	VMClock   vmclock.Config   `yaml:"vmclock"`
	Peers     peers.Config     `yaml:"peers"`
}

// Registry lists every kind of time source clockwatch reads, in the order
// their metrics, status lines and tasks come. A new source is one entry
// here and its field in Sections, above.
func Registry() []Registration {
	return []Registration{
		{Name: KernelSource, build: func(_ *Sections, env Env) *Member { return Kernel(env.Timex) },
			status: func(_ context.Context, _ *Sections, env Env) []Report {
				return []Report{{Reading: kernelReading(env.Timex)}}
			}},
		Register(Source[chrony.Config]{Name: chrony.SourceName, Section: "chrony", Traits: Traits{BoundsRealtime: true, Disciplines: true},
			Field: func(s *Sections) *chrony.Config { return &s.Chrony }, Default: chrony.DefaultConfig,
			New: newChrony, Status: chrony.StatusOnce, Switch: "Poll chronyd (chrony.mode).", Cadence: chronyCadence}),
		Register(Source[ntpd.Config]{Name: ntpd.SourceName, Section: "ntpd", Traits: Traits{BoundsRealtime: true, Disciplines: true},
			Field: func(s *Sections) *ntpd.Config { return &s.Ntpd }, Default: ntpd.DefaultConfig,
			New: newNtpd, Status: ntpd.StatusOnce, Switch: "Query ntpd's mode 6 control port (ntpd.mode)."}),
		Register(Source[sntp.Config]{Name: sntp.SourceName, Section: "ntp_probes", Traits: Traits{BoundsRealtime: true},
			Field: func(s *Sections) *sntp.Config { return &s.NTPProbes }, Default: sntp.DefaultConfig, New: newSNTP,
			Switch: "Probe the NTP servers of ntp_probes.servers; --no-collector.ntp_probes probes none."}),
		Register(Source[PTP]{Name: ptp.SourceName, Section: "ptp",
			Field: func(s *Sections) *PTP { return &s.PTP }, Default: DefaultPTP, New: newPTP,
			Status: func(ctx context.Context, c PTP, h timesource.Host) (timesource.Status, bool) {
				return ptp.StatusOnce(ctx, c.Config, h)
			}}),
		Register(Source[timesyncd.Config]{Name: timesyncd.SourceName, Section: "timesyncd", Traits: Traits{BoundsRealtime: true, Disciplines: true},
			Field: func(s *Sections) *timesyncd.Config { return &s.Timesyncd }, Default: timesyncd.DefaultConfig,
			New: newTimesyncd, Status: timesyncd.StatusOnce}),
		Register(Source[vmclock.Config]{Name: vmclock.SourceName, Section: "vmclock", Traits: Traits{Disruptions: true},
			Field: func(s *Sections) *vmclock.Config { return &s.VMClock }, Default: vmclock.DefaultConfig,
			New: newVMClock, Status: vmclock.StatusOnce}),
		Register(Source[peers.Config]{Name: peers.SourceName, Section: "peers",
			Field: func(s *Sections) *peers.Config { return &s.Peers }, Default: peers.DefaultConfig, New: newPeers}),
	}
}

func newChrony(c chrony.Config, env Env) *Member {
	c = c.Resolve(env.getenv())
	p := chrony.NewPoller(c, env.logger(chrony.SourceName))
	cp := exporter.NewChronyUpdater(p)
	m := &Member{Readings: one(p), Notes: p.Notes, Tasks: []func(context.Context) error{p.Run},
		Updaters: []exporter.Updater{cp}, Gatherers: []prometheus.Gatherer{cp.Gatherer()}, Polled: p.Polled(), Wake: p.Wake}
	if sp := chrony.NewServerPoller(c, env.logger("chrony_server")); sp != nil {
		m.Tasks = append(m.Tasks, sp.Run)
		m.Collectors = append(m.Collectors, exporter.NewChronyServerCollector(sp))
	}
	return m
}

// chronyCadence: the feed follows chronyd's polls (which follow chronyd's
// clock updates), every poll_interval while a source has news at its own
// rate, and at least every max_poll_interval.
func chronyCadence(c chrony.Config) Cadence {
	return Cadence{Poll: c.PollInterval, MaxQuiet: max(c.MaxPollInterval, c.PollInterval)}
}

func newNtpd(c ntpd.Config, env Env) *Member {
	p := ntpd.NewPoller(c, env.logger(ntpd.SourceName))
	return &Member{Readings: one(p), Tasks: []func(context.Context) error{p.Run},
		Updaters: []exporter.Updater{exporter.NewNtpdUpdater(p)}, OwnRate: found(p)}
}

func newSNTP(c sntp.Config, env Env) *Member {
	p := sntp.NewProber(c, env.logger(sntp.SourceName))
	return &Member{Readings: p.Readings, Tasks: []func(context.Context) error{p.Run},
		Collectors: []prometheus.Collector{exporter.NewNTPProbeCollector(p)}, OwnRate: func() bool { return true }}
}

func newPTP(c PTP, env Env) *Member {
	p := ptp.NewPoller(c.Config, env.logger(ptp.SourceName))
	m := Poller(p, exporter.NewPtp4lCollector(p))
	m.OwnRate = found(p)
	return m
}

func newTimesyncd(c timesyncd.Config, env Env) *Member {
	p := timesyncd.NewPoller(c.Resolve(env.getenv()), env.logger(timesyncd.SourceName))
	return Poller(p, exporter.NewTimesyncdCollector(p))
}

func newVMClock(c vmclock.Config, env Env) *Member {
	news := new(loop.Signal)
	p := vmclock.NewPoller(c, env.logger(vmclock.SourceName), vmclock.Options{Changed: func(timesource.Reading) { news.Notify() }})
	m := Poller(p, exporter.NewVMClockCollector(p))
	m.News = news
	return m
}

func newPeers(c peers.Config, env Env) *Member {
	s := peers.New(c, peers.Options{Logger: env.logger(peers.SourceName), Local: env.Local, Self: env.Kubernetes.NodeName,
		Kubernetes: func() (peers.NodeLister, error) { return kubernetes.NewClient(env.Kubernetes, env.getenv()) }})
	// A second opinion whose verdict (OutsideFleet) is a trigger of its
	// own; fed every poll interval, as its rounds come at their own rate.
	return &Member{Readings: one(s), Notes: s.Notes, Tasks: []func(context.Context) error{s.Run},
		Collectors: []prometheus.Collector{exporter.NewPeersCollector(s)}, WatchPeer: s.WatchPeer, OwnRate: func() bool { return true }}
}

// Polling is what most sources are: a task that polls and keeps its last
// reading.
type Polling interface {
	timesource.Source
	Run(ctx context.Context) error
}

// Poller is the member of a source that is one poller and its collectors.
func Poller(p Polling, collectors ...prometheus.Collector) *Member {
	return &Member{Readings: one(p), Tasks: []func(context.Context) error{p.Run}, Collectors: collectors}
}

// one turns a source of one reading into a member's Readings.
func one(s timesource.Source) func() []timesource.Reading {
	return func() []timesource.Reading { return []timesource.Reading{s.Reading()} }
}

// found is OwnRate for a source that has news at its own rate once found.
func found(s timesource.Source) func() bool { return func() bool { return s.Reading().Found } }
