package daemon

import (
	"context"
	"fmt"
	"log/slog"
	"os"
	"sync/atomic"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/common/version"
	"golang.org/x/sync/errgroup"

	"github.com/clockwatch/clockwatch/internal/announce"
	"github.com/clockwatch/clockwatch/internal/config"
	"github.com/clockwatch/clockwatch/internal/exporter"
	"github.com/clockwatch/clockwatch/internal/health"
	"github.com/clockwatch/clockwatch/internal/hostclock"
	kubeclient "github.com/clockwatch/clockwatch/internal/kubernetes"
	"github.com/clockwatch/clockwatch/internal/pulse"
	"github.com/clockwatch/clockwatch/internal/timesources"
	"github.com/clockwatch/clockwatch/internal/transport/kubernetes"
	"github.com/clockwatch/clockwatch/internal/transport/segment"
	"github.com/clockwatch/clockwatch/internal/transport/socket"
)

// Daemon is a configured clockwatch ready to run.
type Daemon struct {
	opts   Options
	logger *slog.Logger
	cfg    atomic.Pointer[config.Config]
	// started is the configuration the daemon started with: what a reload
	// cannot change stays as it says.
	started *config.Config
	reloads *exporter.ReloadMetrics
	// announcer, stepdown and sources are set by Run before any task
	// starts; reloads and the systemd status line read them. The
	// announcer is the daemon's, whichever transports are on; stepdown is
	// nil when its socket is off.
	announcer *announce.Announcer
	stepdown  *socket.Server
	sources   timesources.Members
}

// New prepares a daemon with an already validated configuration.
func New(cfg *config.Config, opts Options, logger *slog.Logger) *Daemon {
	if opts.Clocks == nil {
		opts.Clocks = hostclock.SysClocks{}
	}
	if opts.Timex == nil {
		opts.Timex = hostclock.SysTimex{}
	}
	if opts.MetricsPath == "" {
		opts.MetricsPath = "/metrics"
	}
	if opts.Env.Getenv == nil {
		opts.Env.Getenv = func(string) string { return "" }
	}
	if opts.Env.PID == 0 {
		opts.Env.PID = os.Getpid()
	}
	d := &Daemon{opts: opts, logger: logger, reloads: exporter.NewReloadMetrics(time.Now()), started: cfg}
	d.cfg.Store(cfg)
	return d
}

// Run runs every task until ctx is cancelled or one of them fails.
func (d *Daemon) Run(ctx context.Context) error {
	cfg := d.cfg.Load()
	stepCfg := cfg.Step
	if wd := d.opts.WatchdogInterval; wd > 0 {
		// The watchdog counts samples (systemdTasks): sample well within
		// half its interval even when idle.
		stepCfg.IdleInterval = min(stepCfg.IdleInterval, wd/4)
	}
	steps := NewSteps(stepCfg, cfg.Journal.Resolve(d.opts.Env.Getenv), d.opts.Clocks, d.logger)
	sources := timesources.Build(cfg, timesources.Env{Logger: d.logger, Timex: d.opts.Timex, Getenv: d.opts.Env.Getenv,
		Local: d.localClock, Kubernetes: d.opts.Kubernetes})
	d.sources = sources
	updaters := append([]exporter.Updater{exporter.NewClockUpdater(d.opts.Clocks)}, sources.Updaters()...)
	collectors := append([]prometheus.Collector{
		exporter.NewScraper(d.logger, updaters...),
		d.reloads,
		steps.Collector,
	}, sources.Collectors()...)
	tasks := append(steps.Tasks(), sources.Tasks()...)
	// The periodic work (the stepdown feed and heartbeat every second, the
	// clockbound segment every 4 s, the idle clock samples) shares the
	// pulse's one timer; the second's work rests while no subscriber
	// listens and chronyd's polls feed the policy.
	pl := pulse.New()
	tasks = append(tasks, pl.Run)
	// The idle clock samples share the pulse's wake-ups (every
	// clock.idle_sample_interval or up to half of it sooner: on the
	// segment's 4 s instants by default).
	steps.Sampler.Pace(pl)
	// The Go processors raised by a flood come down on the pulse's
	// wake-ups, up to 10 s after the hold (procs.Hold).
	if d.opts.Procs != nil {
		pl.Every(10*time.Second, d.opts.Procs.Settle)
	}
	// So do systemd's watchdog pings and status line (registered now: the
	// pulse takes none once it runs; their tasks start at READY).
	var beats systemdBeats
	if wd := d.opts.WatchdogInterval; wd > 0 {
		beats.watchdog = beatOn(pl, wd/2)
	}
	if d.opts.Notifier.Enabled() {
		beats.status = beatOn(pl, statusInterval)
	}
	if sources.Wakes() {
		// A clock set changes chronyd's figures at once (and chronyd may be
		// what set the clock): poll it now rather than at its cadence.
		sub := steps.Bus.Subscribe(16)
		tasks = append(tasks, func(ctx context.Context) error {
			defer sub.Close()
			for {
				select {
				case <-ctx.Done():
					return nil
				case <-sub.C():
					sources.Wake()
				}
			}
		})
	}
	// The clockbound segment, made below, looks at the figures after each
	// feed (set before any task runs).
	var cb *segment.Publisher
	var kp *kubernetes.Publisher
	// The announcer is the daemon's: it runs whenever a transport is on,
	// each transport on or off by itself.
	if announcerWanted(cfg, d.opts.Kubernetes) {
		d.announcer = NewAnnouncer(cfg.Stepdown.Policy, steps, sources, steps.Journal.Dir(), d.logger)
		fo := feedOptions(cfg, sources, pl)
		fo.Fed = func() {
			if cb != nil {
				cb.Nudge()
			}
		}
		if cfg.Stepdown.Enabled {
			var peers socket.PeerWatcher
			if pw := sources.PeerWatcher(); pw != nil {
				peers = pw
			}
			sd, err := NewStepdownSocket(cfg.Stepdown.Resolve(d.opts.Env.Getenv), d.announcer, pl, d.opts.Env, d.logger, peers, d.opts.Procs.Busy)
			if err != nil {
				return err
			}
			d.stepdown = sd
			fo.Subscribers = sd.Subscribers
			tasks = append(tasks, sd.Run)
		}
		feed := NewFeed(d.announcer, steps, sources, fo, d.logger)
		collectors = append(collectors, d.announcer.Collector())
		if d.stepdown != nil {
			collectors = append(collectors, d.stepdown.Collector(), feed.WriteDelay)
		}
		tasks = append(tasks, feed.Tasks()...)
		if d.opts.Kubernetes.Enabled() {
			// Subscribed by New, before any task runs, like every
			// transport: no announcement after the start is missed.
			var err error
			kp, err = kubernetes.New(d.opts.Kubernetes, d.announcer, d.opts.Env.Getenv, d.logger)
			if err != nil {
				if d.stepdown != nil {
					d.stepdown.Close()
				}
				return err
			}
			collectors = append(collectors, kp.Collector())
			tasks = append(tasks, kp.Run)
		}
		tasks = append(tasks, func(ctx context.Context) error {
			return warnIfUndisciplined(ctx, sources, d.opts.Timex, cfg.Stepdown, d.logger)
		})
	}
	// A start that fails from here on (a port in use) gives the stepdown
	// socket and the clockbound segment's lock back: no socket file or lock
	// file is left behind.
	fail := func(err error) error {
		if d.stepdown != nil {
			d.stepdown.Close()
		}
		if cb != nil {
			cb.Close()
		}
		if kp != nil {
			kp.Close()
		}
		return err
	}
	if cfg.ClockBound.Enabled {
		var err error
		if cb, err = NewClockBound(segmentPath(cfg.ClockBound, d.opts.Env.Getenv), cfg.ClockBound, sources.BoundingReadings, d.announcer, pl, d.logger); err != nil {
			return fail(err)
		}
		collectors = append(collectors, cb.Collector())
		tasks = append(tasks, cb.Run)
	}
	reg, err := exporter.NewRegistry(collectors...)
	if err != nil {
		return fail(fmt.Errorf("registering collectors: %w", err))
	}
	// chronyd's figures change only when the poller polls, seconds apart:
	// gather them once per poll, not once per scrape.
	gatherer := exporter.MergeGatherers(reg, sources.Gatherers()...)
	// metrics.detail: false leaves the per-source families and the HELP
	// text out; read at every scrape, so that a reload applies it.
	gatherer = exporter.DetailGatherer(gatherer, func() bool { return d.cfg.Load().Metrics.Detail })
	listeners, err := d.listen()
	if err != nil {
		return fail(err)
	}

	g, ctx := errgroup.WithContext(ctx)
	g.Go(func() error { return d.serveHTTP(ctx, listeners, d.handler(gatherer)) })
	g.Go(func() error { return d.reloadOnHUP(ctx) })
	for _, task := range tasks {
		g.Go(func() error { return task(ctx) })
	}
	select {
	case <-steps.Ready():
	case <-ctx.Done():
		return g.Wait()
	}

	d.logger.Info("clockwatch started", "version", version.Version, "revision", version.GetRevision(),
		"config", d.opts.ConfigFile, "sample_interval", cfg.Clock.SampleInterval, "idle_sample_interval", stepCfg.IdleInterval,
		"state_dir", steps.Journal.Dir(), "clock_epoch", steps.Journal.State().Epoch)
	for _, task := range d.systemdTasks(steps, beats) {
		g.Go(func() error { return task(ctx) })
	}
	return g.Wait()
}

// announcerWanted says whether any of the announcer's transports is on: the
// stepdown socket, the bounded-time segment, the Kubernetes Node condition
// (--kubernetes.node-name), or the peers (whose replies carry the state,
// and whose judge is a trigger). The transports' switches are all here; a
// new transport adds its own.
func announcerWanted(cfg *config.Config, k8s kubeclient.Options) bool {
	return cfg.Stepdown.Enabled || cfg.ClockBound.Enabled || k8s.Enabled() || cfg.Peers.Enabled()
}

// verdict judges the clock from the daemon's own readings, with the
// thresholds in force now.
func (d *Daemon) verdict(sources timesources.Members) health.Verdict {
	f := health.Gather(d.opts.Clocks, d.opts.Timex)
	for _, r := range sources.Readings() {
		f.AddSource(r)
	}
	f.Notes = sources.Notes()
	return health.Judge(f, d.cfg.Load().Health.Thresholds())
}
