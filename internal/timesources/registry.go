package timesources

import (
	"context"
	"fmt"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/clockwatch/clockwatch/internal/config"
	"github.com/clockwatch/clockwatch/internal/exporter"
	"github.com/clockwatch/clockwatch/internal/kernel"
	"github.com/clockwatch/clockwatch/internal/kubernetes"
	"github.com/clockwatch/clockwatch/internal/loop"
	"github.com/clockwatch/clockwatch/internal/peers"
	"github.com/clockwatch/clockwatch/internal/probe"
	"github.com/clockwatch/clockwatch/internal/probe/chrony"
	"github.com/clockwatch/clockwatch/internal/probe/ntpd"
	"github.com/clockwatch/clockwatch/internal/probe/ptp"
	"github.com/clockwatch/clockwatch/internal/probe/sntp"
	"github.com/clockwatch/clockwatch/internal/probe/timesyncd"
	"github.com/clockwatch/clockwatch/internal/probe/vmclock"
	"github.com/clockwatch/clockwatch/internal/timesource"
)

// Registration is one kind of time source: how the daemon builds it from
// the configuration and how `clockwatch status` polls it once.
type Registration struct {
	// Name is the source's name, as its readings carry it.
	Name string
	Traits
	// New builds the source from the configuration, nil when it is turned
	// off. The configuration is valid.
	New func(cfg *config.Config, env Env) *Member
	// Status polls the source once for `clockwatch status` (nil: status
	// does not poll it) and returns what it has to show; none when it is
	// off or, under "auto", absent.
	Status func(ctx context.Context, cfg *config.Config, env Env) []Report
	// Switch is the --[no-]collector.<Name> command-line switch that turns
	// the source on or off over the configuration file (nil: none).
	Switch *Switch
}

// Switch turns a source on or off in a configuration.
type Switch struct {
	// Help says what the switch does, for --help.
	Help string
	// Set turns the source on or off in cfg, or says why it cannot be
	// turned on.
	Set func(cfg *config.Config, on bool) error
}

// Report is one source's contribution to `clockwatch status`.
type Report struct {
	Reading timesource.Reading
	// Lines are the source's rich state for the report, in order.
	Lines []timesource.Line
	Notes []timesource.Note
	Traits
}

// Registry lists every kind of time source clockwatch reads, in the order
// their metrics, status lines and tasks come. A new source is one entry.
func Registry() []Registration {
	return []Registration{
		{Name: probe.KernelSource, New: newKernel, Status: kernelStatus},
		{Name: chrony.SourceName, Traits: Traits{BoundsRealtime: true, Disciplines: true}, New: newChrony, Status: statusOf(func(c *config.Config) chrony.Config { return c.Chrony }, chrony.StatusOnce),
			Switch: &Switch{Help: "Poll chronyd (chrony.enabled).", Set: func(cfg *config.Config, on bool) error {
				cfg.Chrony.Enabled = on
				return nil
			}}},
		{Name: ntpd.SourceName, Traits: Traits{BoundsRealtime: true, Disciplines: true}, New: newNtpd, Status: statusOf(func(c *config.Config) ntpd.Config { return c.Ntpd }, ntpd.StatusOnce),
			Switch: &Switch{Help: "Query ntpd's mode 6 control port (ntpd.enabled).", Set: func(cfg *config.Config, on bool) error {
				cfg.Ntpd.Enabled = on
				return nil
			}}},
		{Name: sntp.SourceName, Traits: Traits{BoundsRealtime: true}, New: newSNTP,
			Switch: &Switch{Help: "Probe the NTP servers of ntp_probes.servers; --no-collector.ntp_probes probes none.", Set: func(cfg *config.Config, on bool) error {
				if !on {
					cfg.NTPProbes.Servers = nil
				} else if len(cfg.NTPProbes.Servers) == 0 {
					return fmt.Errorf("--collector.ntp_probes: ntp_probes.servers lists no server to probe")
				}
				return nil
			}}},
		{Name: ptp.SourceName, New: newPTP, Status: statusOf(func(c *config.Config) ptp.Config { return c.PTP.Config }, ptp.StatusOnce)},
		{Name: timesyncd.SourceName, Traits: Traits{BoundsRealtime: true, Disciplines: true}, New: newTimesyncd, Status: statusOf(func(c *config.Config) timesyncd.Config { return c.Timesyncd }, timesyncd.StatusOnce)},
		{Name: vmclock.SourceName, Traits: Traits{Disruptions: true}, New: newVMClock, Status: statusOf(func(c *config.Config) vmclock.Config { return c.VMClock }, vmclock.StatusOnce)},
		{Name: peers.SourceName, New: newPeers},
	}
}

// Build builds the enabled sources of cfg.
func Build(cfg *config.Config, env Env) Members {
	var ms Members
	for _, reg := range Registry() {
		m := reg.New(cfg, env)
		if m == nil {
			continue
		}
		m.Name, m.Traits = reg.Name, reg.Traits
		ms = append(ms, m)
	}
	return ms
}

// Status polls every enabled source once, for `clockwatch status`.
func Status(ctx context.Context, cfg *config.Config, env Env) []Report {
	var out []Report
	for _, reg := range Registry() {
		if reg.Status == nil {
			continue
		}
		for _, r := range reg.Status(ctx, cfg, env) {
			r.Traits = reg.Traits
			out = append(out, r)
		}
	}
	return out
}

// Disciplined reports whether any report of a source that disciplines the
// clock answered with a time solution: the rule of Members.Disciplining,
// for a single poll.
func Disciplined(rs []Report) bool {
	for _, r := range rs {
		if r.Disciplines && Answers(r.Reading) {
			return true
		}
	}
	return false
}

// Kernel is the kernel as a member: its adjtimex state, read at each
// reading, a fallback whose error bound is judged (probe.KernelReading).
func Kernel(timex probe.TimexReader) *Member {
	return &Member{Name: probe.KernelSource, Role: timesource.Fallback,
		Readings: func() []timesource.Reading { return []timesource.Reading{kernelReading(timex)} },
		Probes:   []exporter.Probe{exporter.NewKernelProbe(timex)}}
}

func kernelReading(timex probe.TimexReader) timesource.Reading {
	raw, err := timex.ReadTimex()
	return probe.KernelReading(kernel.Decode(raw), err)
}

func newKernel(_ *config.Config, env Env) *Member { return Kernel(env.Timex) }

func kernelStatus(_ context.Context, _ *config.Config, env Env) []Report {
	return []Report{{Reading: kernelReading(env.Timex)}}
}

func newChrony(cfg *config.Config, env Env) *Member {
	c := cfg.Chrony.Resolve(env.getenv())
	if !c.Enabled {
		return nil
	}
	p := chrony.NewPoller(c, env.logger(chrony.SourceName))
	cp := exporter.NewChronyProbe(p)
	m := &Member{Role: c.SourceRole(), Readings: one(p), Notes: p.Notes, Tasks: []func(context.Context) error{p.Run},
		Probes: []exporter.Probe{cp}, Gatherers: []prometheus.Gatherer{cp.Gatherer()}, Polled: p.Polled(), Wake: p.Wake}
	if sp := chrony.NewServerPoller(c, env.logger("chrony_server")); sp != nil {
		m.Tasks = append(m.Tasks, sp.Run)
		m.Collectors = append(m.Collectors, exporter.NewChronyServerCollector(sp))
	}
	return m
}

func newNtpd(cfg *config.Config, env Env) *Member {
	if !cfg.Ntpd.Enabled {
		return nil
	}
	p := ntpd.NewPoller(cfg.Ntpd, env.logger(ntpd.SourceName))
	return &Member{Role: cfg.Ntpd.SourceRole(), Readings: one(p), Tasks: []func(context.Context) error{p.Run},
		Probes: []exporter.Probe{exporter.NewNtpdProbe(p)}, OwnRate: found(p)}
}

func newSNTP(cfg *config.Config, env Env) *Member {
	c := cfg.NTPProbes
	if len(c.Servers) == 0 {
		return nil
	}
	p := sntp.NewProber(c, env.logger(sntp.SourceName))
	return &Member{Role: c.SourceRole(), Readings: p.Readings, Tasks: []func(context.Context) error{p.Run},
		Collectors: []prometheus.Collector{exporter.NewNTPProbeCollector(p)}, OwnRate: func() bool { return true }}
}

func newPTP(cfg *config.Config, env Env) *Member {
	if !cfg.PTP.Enabled {
		return nil
	}
	p := ptp.NewPoller(cfg.PTP.Config, env.logger(ptp.SourceName))
	m := Poller(p, timesource.Authoritative, exporter.NewPtp4lCollector(p))
	m.OwnRate = found(p)
	return m
}

func newTimesyncd(cfg *config.Config, env Env) *Member {
	if !cfg.Timesyncd.Enabled() {
		return nil
	}
	p := timesyncd.NewPoller(cfg.Timesyncd.Resolve(env.getenv()), env.logger(timesyncd.SourceName))
	return Poller(p, timesource.Authoritative, exporter.NewTimesyncdCollector(p))
}

func newVMClock(cfg *config.Config, env Env) *Member {
	if !cfg.VMClock.Enabled() {
		return nil
	}
	news := new(loop.Signal)
	p := vmclock.NewPoller(cfg.VMClock, env.logger(vmclock.SourceName), vmclock.Options{Changed: func(timesource.Reading) { news.Notify() }})
	m := Poller(p, timesource.SecondOpinion, exporter.NewVMClockCollector(p))
	m.News = news
	return m
}

func newPeers(cfg *config.Config, env Env) *Member {
	if !cfg.Peers.Enabled() {
		return nil
	}
	s := peers.New(cfg.Peers, peers.Options{Logger: env.logger(peers.SourceName), Local: env.Local, Self: env.Kubernetes.NodeName,
		Kubernetes: func() (peers.NodeLister, error) { return kubernetes.NewClient(env.Kubernetes, env.getenv()) }})
	// A second opinion whose verdict (OutsideFleet) is a trigger of its
	// own; fed every poll interval, as its rounds come at their own rate.
	return &Member{Role: timesource.SecondOpinion, Readings: one(s), Notes: s.Notes, Tasks: []func(context.Context) error{s.Run},
		Collectors: []prometheus.Collector{exporter.NewPeersCollector(s)}, WatchPeer: s.WatchPeer, OwnRate: func() bool { return true }}
}

// Polling is what most sources are: a task that polls and keeps its last
// reading.
type Polling interface {
	timesource.Source
	Run(ctx context.Context) error
}

// Poller is the member of a source that is one poller and its collectors.
func Poller(p Polling, role timesource.Role, collectors ...prometheus.Collector) *Member {
	return &Member{Role: role, Readings: one(p), Tasks: []func(context.Context) error{p.Run}, Collectors: collectors}
}

// one turns a source of one reading into a member's Readings.
func one(s timesource.Source) func() []timesource.Reading {
	return func() []timesource.Reading { return []timesource.Reading{s.Reading()} }
}

// found is OwnRate for a source that has news at its own rate once found.
func found(s timesource.Source) func() bool { return func() bool { return s.Reading().Found } }

// statusOf is the Status of a registration: the source's StatusOnce, given
// the source's section (sec).
func statusOf[C any](sec func(*config.Config) C, f timesource.StatusFunc[C]) func(context.Context, *config.Config, Env) []Report {
	return func(ctx context.Context, cfg *config.Config, env Env) []Report {
		st, ok := f(ctx, sec(cfg), env.host())
		if !ok {
			return nil
		}
		return []Report{{Reading: st.Reading, Lines: st.Lines, Notes: st.Notes}}
	}
}
