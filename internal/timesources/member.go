package timesources

import (
	"context"
	"io/fs"
	"log/slog"
	"sort"
	"sync/atomic"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/clockwatch/clockwatch/internal/exporter"
	"github.com/clockwatch/clockwatch/internal/hostclock"
	"github.com/clockwatch/clockwatch/internal/kubernetes"
	"github.com/clockwatch/clockwatch/internal/loop"
	"github.com/clockwatch/clockwatch/internal/peers"
	"github.com/clockwatch/clockwatch/internal/timesource"
	"github.com/clockwatch/clockwatch/stepdown"
)

// Env is what a source is built with besides its configuration section: the
// host it reads and the logger.
type Env struct {
	// Logger logs for the daemon; each member gets it with probe=<name>.
	Logger *slog.Logger
	// Timex reads the kernel's discipline state (the kernel member).
	Timex hostclock.TimexReader
	// Proc is /proc, where `clockwatch status` finds which chrony.conf the
	// running chronyd reads.
	Proc fs.FS
	// Getenv is the process's environment ($RUNTIME_DIRECTORY,
	// $DBUS_SYSTEM_BUS_ADDRESS); nil is an empty one. Sources never read
	// the environment themselves.
	Getenv func(string) string
	// Local is what this node says of its own clock to others (the
	// peers' replies carry it); nil: unknown.
	Local func() peers.State
	// Kubernetes are the --kubernetes.* credentials and node name (the
	// peers' Node list).
	Kubernetes kubernetes.Options
}

func (e Env) getenv() func(string) string {
	if e.Getenv == nil {
		return func(string) string { return "" }
	}
	return e.Getenv
}

// host is what a source's StatusOnce reads besides its section, now.
func (e Env) host() timesource.Host {
	return timesource.Host{Proc: e.Proc, Getenv: e.Getenv, Now: time.Now()}
}

func (e Env) logger(name string) *slog.Logger {
	if e.Logger == nil {
		return slog.New(slog.DiscardHandler)
	}
	return e.Logger.With("probe", name)
}

// Traits are what the daemon asks of a source beyond its readings, the same
// for every configuration of it.
type Traits struct {
	// BoundsRealtime is true when the source's error bound bounds
	// CLOCK_REALTIME, so that the bounded-time segment may publish it.
	// ptp4l's does not: with hardware timestamping it bounds the PTP
	// hardware clock, and phc2sys's offset is not visible to clockwatch.
	BoundsRealtime bool
	// Disciplines is true when an answer with a time solution means a time
	// daemon keeps this clock: the undisciplined-host warning (the daemon's
	// at start, `clockwatch status`'s) looks at these sources only.
	Disciplines bool
	// Disruptions is true when the source's readings carry the
	// hypervisor's disruption signals (VMClock's marker and "unreliable"),
	// which step down whatever the source's role: the start waits for its
	// first poll, so that a marker that changed while clockwatch was not
	// running steps down before any ok.
	Disruptions bool
}

// Member is one enabled time source as the daemon runs it. Only Name and
// Readings are required; a nil field is something the source does not do.
type Member struct {
	// Name is the source's name (its readings carry it, except the NTP
	// probes': one per server).
	Name string
	Traits
	// Role is what the source's readings may do: its section's role,
	// which Build sets and stamps on its readings.
	Role timesource.Role
	// Readings returns the source's last readings; it never blocks on the
	// source.
	Readings func() []timesource.Reading
	// Notes returns what its rich data shows beyond the readings
	// (timesource.Noter), for health.
	Notes func() []timesource.Note
	// Tasks run for the daemon's life, under its errgroup.
	Tasks []func(context.Context) error
	// Updaters are read on every scrape by the exporter's Scraper (which adds
	// clockwatch_<name>_up); Collectors are registered beside it.
	Updaters   []exporter.Updater
	Collectors []prometheus.Collector
	// Gatherers are merged after the registry: figures gathered once per
	// poll rather than once per scrape.
	Gatherers []prometheus.Gatherer
	// Polled fires after each poll of a source whose figures the stepdown
	// feed follows as they come (chronyd's).
	Polled *loop.Signal
	// News fires when the source has news the stepdown policy must hear at
	// once rather than at its next feed (VMClock's marker changed).
	News *loop.Signal
	// Wake asks for a poll now: a clock set changes the source's figures
	// (and the source may be what set the clock).
	Wake func()
	// WatchPeer, when set, follows another node's clock for the stepdown
	// socket's watch_peer (the peers source).
	WatchPeer func(peer string, send func(stepdown.Message)) (stop func(), err error)
	// OwnRate, when set, reports whether the source has news at its own
	// rate (found, for ptp4l and ntpd; always, for the NTP probes): while
	// any has, the stepdown feed is fed every poll interval.
	OwnRate func() bool
}

// Members are the enabled sources, in the registry's order.
type Members []*Member

// Readings returns the last reading of every member, keyed by source.
func (ms Members) Readings() timesource.Set {
	set := timesource.Set{}
	for _, m := range ms {
		for _, r := range m.Readings() {
			set[r.Source] = r
		}
	}
	return set
}

// Names returns, sorted, the sources whose first poll the stepdown state
// waits for at start: every reading that may move it (second opinions
// cannot step anyone down, so the start does not wait for them).
func (ms Members) Names() []string {
	var names []string
	for _, m := range ms {
		if m.Role == timesource.SecondOpinion && !m.Disruptions {
			continue
		}
		for _, r := range m.Readings() {
			names = append(names, r.Source)
		}
	}
	sort.Strings(names)
	return names
}

// Notes returns every member's notes.
func (ms Members) Notes() []timesource.Note {
	var ns []timesource.Note
	for _, m := range ms {
		if m.Notes != nil {
			ns = append(ns, m.Notes()...)
		}
	}
	return ns
}

// Tasks returns every member's tasks.
func (ms Members) Tasks() []func(context.Context) error {
	return gather(ms, func(m *Member) []func(context.Context) error { return m.Tasks })
}

// Updaters returns every member's updaters, for exporter.NewScraper.
func (ms Members) Updaters() []exporter.Updater {
	return gather(ms, func(m *Member) []exporter.Updater { return m.Updaters })
}

// Collectors returns every member's collectors.
func (ms Members) Collectors() []prometheus.Collector {
	return gather(ms, func(m *Member) []prometheus.Collector { return m.Collectors })
}

// Gatherers returns every member's gatherers.
func (ms Members) Gatherers() []prometheus.Gatherer {
	return gather(ms, func(m *Member) []prometheus.Gatherer { return m.Gatherers })
}

// gather joins what part gives of every member, in the members' order (nil
// when none gives anything).
func gather[T any](ms Members, part func(*Member) []T) []T {
	var all []T
	for _, m := range ms {
		all = append(all, part(m)...)
	}
	return all
}

// Wake asks every member that can for a poll now.
func (ms Members) Wake() {
	for _, m := range ms {
		if m.Wake != nil {
			m.Wake()
		}
	}
}

// Wakes reports whether any member wants to hear of clock sets.
func (ms Members) Wakes() bool {
	for _, m := range ms {
		if m.Wake != nil {
			return true
		}
	}
	return false
}

// Polled returns one channel that receives after a poll of any member
// whose polls the stepdown feed follows (nil: none does).
func (ms Members) Polled() <-chan struct{} {
	var ss []*loop.Signal
	for _, m := range ms {
		ss = append(ss, m.Polled)
	}
	return loop.Merge(ss...)
}

// News returns one channel that receives when any member has news for the
// stepdown feed (nil: none has), however many members have news.
func (ms Members) News() <-chan struct{} {
	var ss []*loop.Signal
	for _, m := range ms {
		ss = append(ss, m.News)
	}
	return loop.Merge(ss...)
}

// PeerWatcher is the member that follows other nodes' clocks, for the
// stepdown socket's watch_peer (nil: none does).
func (ms Members) PeerWatcher() PeerWatcher {
	for _, m := range ms {
		if m.WatchPeer != nil {
			return PeerWatcher(m.WatchPeer)
		}
	}
	return nil
}

// PeerWatcher is a member's WatchPeer as the stepdown socket takes it.
type PeerWatcher func(peer string, send func(stepdown.Message)) (stop func(), err error)

// WatchPeer calls f.
func (f PeerWatcher) WatchPeer(peer string, send func(stepdown.Message)) (func(), error) {
	return f(peer, send)
}

// OwnRate reports whether any member has news at its own rate; once one
// had, it reports true for good (a source found and lost again keeps its
// cadence).
func (ms Members) OwnRate() func() bool {
	var own []func() bool
	for _, m := range ms {
		if m.OwnRate != nil {
			own = append(own, m.OwnRate)
		}
	}
	var found atomic.Bool
	return func() bool {
		if found.Load() {
			return true
		}
		for _, f := range own {
			if f() {
				found.Store(true)
				return true
			}
		}
		return false
	}
}

// BoundingReadings returns, sorted by source, the readings of the members
// that bound CLOCK_REALTIME: what the bounded-time segment may publish.
func (ms Members) BoundingReadings() []timesource.Reading {
	set := timesource.Set{}
	for _, m := range ms {
		if m.BoundsRealtime {
			for _, r := range m.Readings() {
				set[r.Source] = r
			}
		}
	}
	return set.Sorted()
}

// Disciplining tells, from the readings of the members that discipline the
// clock, whether each has given its first answer or failed (decided) and
// whether any answered with a time solution: the undisciplined-host warning
// waits for decided, and holds its tongue when answered.
func (ms Members) Disciplining() (decided, answered bool) {
	decided = true
	for _, m := range ms {
		if !m.Disciplines {
			continue
		}
		for _, r := range m.Readings() {
			answered = answered || Answers(r)
			decided = decided && !r.Pending()
		}
	}
	return decided, answered
}

// Answers reports whether r is an answer with a time solution from a source
// whose word the judges take (authoritative).
func Answers(r timesource.Reading) bool {
	return r.Role == timesource.Authoritative && r.Up && r.HasData
}
