package daemon

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"net/http"
	"os"
	"os/signal"
	"strings"
	"sync/atomic"
	"syscall"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/common/version"
	"github.com/prometheus/exporter-toolkit/web"
	"golang.org/x/sync/errgroup"

	"github.com/clockwatch/clockwatch/internal/announce"
	"github.com/clockwatch/clockwatch/internal/config"
	"github.com/clockwatch/clockwatch/internal/exporter"
	"github.com/clockwatch/clockwatch/internal/health"
	"github.com/clockwatch/clockwatch/internal/host"
	kubeclient "github.com/clockwatch/clockwatch/internal/kubernetes"
	"github.com/clockwatch/clockwatch/internal/probe"
	"github.com/clockwatch/clockwatch/internal/pulse"
	"github.com/clockwatch/clockwatch/internal/sdnotify"
	"github.com/clockwatch/clockwatch/internal/timesources"
	"github.com/clockwatch/clockwatch/internal/transport/kubernetes"
	"github.com/clockwatch/clockwatch/internal/transport/segment"
	"github.com/clockwatch/clockwatch/internal/transport/socket"
)

// Options are the process settings the command line gives.
type Options struct {
	// ConfigFile is the YAML file to load and reload on SIGHUP; empty for
	// the defaults.
	ConfigFile string
	// Web is the exporter-toolkit listener configuration (addresses, TLS
	// and basic auth file, systemd socket).
	Web *web.FlagConfig
	// MetricsPath is where metrics are served, usually /metrics.
	MetricsPath string
	// Clocks and Timex read the host; nil means the real system readers.
	Clocks probe.ClockReader
	Timex  probe.TimexReader
	// Notifier tells systemd about start-up, reloads, shutdown and the
	// status line; nil does nothing.
	Notifier *sdnotify.Notifier
	// WatchdogInterval is systemd's watchdog timeout
	// (sdnotify.WatchdogInterval); zero turns the watchdog off.
	WatchdogInterval time.Duration
	// MaxHTTPConns caps the HTTP connections; zero is 256.
	MaxHTTPConns int
	// Collectors are the --[no-]collector.<name> switches, applied over
	// the file at every reload too (New's configuration has them already).
	Collectors Collectors
	// Kubernetes is the Node condition and Events transport
	// (--kubernetes.*); off without a node name.
	Kubernetes kubeclient.Options
	// Env is the process's environment as systemd sets it
	// (STATE_DIRECTORY, RUNTIME_DIRECTORY, LISTEN_PID, LISTEN_FDS,
	// LISTEN_FDNAMES; DBUS_SYSTEM_BUS_ADDRESS) and its pid: the daemon never
	// reads the environment itself. A nil Getenv is an empty environment, a
	// zero PID os.Getpid().
	Env host.Env
	// ChronyAddress is --chrony.address: chrony.address over the file's,
	// at every reload too, as chrony_exporter has it; "" leaves the file's.
	ChronyAddress string
}

// ApplyFlags applies the command line's settings over a configuration
// loaded from the file: the collector switches, then --chrony.address. The
// flag wins over the file, at the start and at every reload.
func (o Options) ApplyFlags(cfg *config.Config) (*config.Config, error) {
	cfg, err := o.Collectors.Apply(cfg)
	if err != nil || o.ChronyAddress == "" {
		return cfg, err
	}
	out := *cfg
	out.Chrony.Address = o.ChronyAddress
	if err := out.Chrony.Validate(); err != nil {
		return nil, fmt.Errorf("--chrony.address=%s: %w", o.ChronyAddress, err)
	}
	return &out, nil
}

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
		opts.Clocks = probe.SysClocks{}
	}
	if opts.Timex == nil {
		opts.Timex = probe.SysTimex{}
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
	probes := append([]exporter.Probe{exporter.NewClockProbe(d.opts.Clocks)}, sources.Probes()...)
	collectors := append([]prometheus.Collector{
		exporter.NewScraper(d.logger, probes...),
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
			sd, err := NewStepdownSocket(cfg.Stepdown.Resolve(d.opts.Env.Getenv), d.announcer, pl, d.opts.Env, d.logger, peers)
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

// systemdTasks tell systemd the daemon is ready (every task has started and
// the sampler has its first sample), keep its status line on the current
// verdict, ping its watchdog while the clock sampler keeps sampling, and
// say when the daemon stops. With no NOTIFY_SOCKET they do nothing.
func (d *Daemon) systemdTasks(steps *Steps, beats systemdBeats) []func(context.Context) error {
	n := d.opts.Notifier
	status := func() string { return d.verdict(d.sources).Summary() }
	if err := n.Ready(status()); err != nil {
		d.logger.Warn("notifying systemd", "err", err)
	}
	last, changed := steps.Sampler.Gauges().Load().Samples, time.Now()
	wd := &sdnotify.Watchdog{Pinger: n, Interval: d.opts.WatchdogInterval, Logger: d.logger, Beat: beats.watchdog, Healthy: func() error {
		if s := steps.Sampler.Gauges().Load().Samples; s != last {
			last, changed = s, time.Now()
			return nil
		}
		if stuck := time.Since(changed); stuck > d.opts.WatchdogInterval/2 {
			return fmt.Errorf("the clock sampler has taken no sample for %s", stuck.Round(time.Millisecond))
		}
		return nil
	}}
	tasks := []func(context.Context) error{
		wd.Run,
		func(ctx context.Context) error {
			<-ctx.Done()
			if err := n.Stopping(); err != nil {
				d.logger.Warn("notifying systemd", "err", err)
			}
			return nil
		},
	}
	if n.Enabled() {
		sr := &sdnotify.StatusReporter{Statuser: n, Interval: statusInterval, Status: status, Logger: d.logger, Beat: beats.status}
		tasks = append(tasks, sr.Run)
	}
	return tasks
}

// listen opens the HTTP listeners up front, so that a port in use fails the
// start (not a task later) and so that the log names the bound address even
// for port 0. With --web.systemd-socket they are the sockets systemd passed,
// less the stepdown socket.
func (d *Daemon) listen() ([]net.Listener, error) {
	if d.opts.Web == nil || d.opts.Web.WebListenAddresses == nil {
		return nil, nil
	}
	if d.opts.Web.WebSystemdSocket != nil && *d.opts.Web.WebSystemdSocket {
		return d.activatedWebListeners()
	}
	var ls []net.Listener
	for _, addr := range *d.opts.Web.WebListenAddresses {
		l, err := net.Listen("tcp", addr)
		if err != nil {
			for _, o := range ls {
				o.Close()
			}
			return nil, fmt.Errorf("listening for HTTP on %s: %w", addr, err)
		}
		ls = append(ls, l)
	}
	return ls, nil
}

func (d *Daemon) handler(reg prometheus.Gatherer) http.Handler {
	mux := http.NewServeMux()
	mux.Handle(d.opts.MetricsPath, exporter.MetricsHandler(reg, slog.NewLogLogger(d.logger.Handler(), slog.LevelError)))
	mux.HandleFunc("/healthz", func(w http.ResponseWriter, _ *http.Request) {
		w.Header().Set("Content-Type", "text/plain; charset=utf-8")
		fmt.Fprintln(w, "ok")
	})
	// Readiness (a Kubernetes readinessProbe): ready once every source the
	// stepdown state waits for has reported, so that a rolled-out pod is
	// not counted available while its state is still unknown.
	mux.HandleFunc("/readyz", func(w http.ResponseWriter, _ *http.Request) {
		w.Header().Set("Content-Type", "text/plain; charset=utf-8")
		if d.announcer != nil && d.announcer.Starting() {
			w.WriteHeader(http.StatusServiceUnavailable)
			fmt.Fprintln(w, "starting: waiting for every time source's first report")
			return
		}
		fmt.Fprintln(w, "ok")
	})
	if d.opts.MetricsPath != "/" {
		landing, err := web.NewLandingPage(web.LandingConfig{
			Name:        "clockwatch",
			Description: "Watches this machine's clocks: steps, offset, time daemons, and the stepdown socket for lock holders.",
			Version:     buildVersion(),
			// No pprof links: pprof is not served. A 60 s CPU profile on
			// the metrics port is a cost anyone who reaches it could
			// impose, and it would need a write timeout of minutes.
			Profiling: "false",
			Links: []web.LandingLinks{
				{Address: d.opts.MetricsPath, Text: "Metrics"},
				{Address: "/healthz", Text: "Liveness (the process answers; the clock's health is in the metrics and clockwatch status)"},
				{Address: "/readyz", Text: "Readiness (every time source has reported)"},
			},
		})
		if err == nil {
			mux.Handle("/", landing)
		}
	}
	return mux
}

func (d *Daemon) maxHTTPConns() int {
	if d.opts.MaxHTTPConns > 0 {
		return d.opts.MaxHTTPConns
	}
	return maxHTTPConns
}

func (d *Daemon) serveHTTP(ctx context.Context, listeners []net.Listener, h http.Handler) error {
	if d.opts.Web == nil {
		<-ctx.Done()
		return nil
	}
	if f := d.opts.Web.WebConfigFile; f != nil {
		if err := checkWebConfig(*f); err != nil {
			return err
		}
	}
	limit := newConnLimiter(d.maxHTTPConns())
	if listeners == nil {
		srv := newHTTPServer(h, limit)
		errc := make(chan error, 1)
		go func() { errc <- web.ListenAndServe(srv, d.opts.Web, d.logger) }()
		return waitHTTP(ctx, errc, []*http.Server{srv})
	}
	// One server per listener: exporter-toolkit's ServeMultiple shares one
	// and each of its goroutines rewrites the server's Handler. With a web
	// config (basic auth), each server's auth handler is put behind the
	// shared authGate, so that wrong passwords cannot take the CPU.
	var gate *authGate
	if f := d.opts.Web.WebConfigFile; f != nil && *f != "" {
		gate = newAuthGate(authSlots, authSlotWait, authHoldFactor)
	}
	errc := make(chan error, len(listeners))
	servers := make([]*http.Server, len(listeners))
	for i, l := range listeners {
		srv := newHTTPServer(h, limit)
		servers[i] = srv
		l = limit.wrap(l)
		if gate != nil {
			l = &gatedListener{Listener: l, install: func() { srv.Handler = gate.in(srv.Handler) }}
		}
		go func() { errc <- web.Serve(l, srv, d.opts.Web, d.logger) }()
	}
	return waitHTTP(ctx, errc, servers)
}

// waitHTTP waits for a server to fail or ctx to end, then shuts every server
// down.
func waitHTTP(ctx context.Context, errc <-chan error, servers []*http.Server) error {
	select {
	case err := <-errc:
		for _, srv := range servers {
			srv.Close()
		}
		return fmt.Errorf("serving HTTP: %w", err)
	case <-ctx.Done():
	}
	shutdownCtx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	var errs []error
	for _, srv := range servers {
		if err := srv.Shutdown(shutdownCtx); err != nil {
			errs = append(errs, fmt.Errorf("stopping HTTP server: %w", err))
		}
	}
	for range servers {
		if err := <-errc; err != nil && !errors.Is(err, http.ErrServerClosed) {
			errs = append(errs, fmt.Errorf("serving HTTP: %w", err))
		}
	}
	return errors.Join(errs...)
}

// reloadOnHUP reloads the configuration on SIGHUP. A file that does not
// load or validate is refused: the running configuration stays.
func (d *Daemon) reloadOnHUP(ctx context.Context) error {
	hup := make(chan os.Signal, 1)
	signal.Notify(hup, syscall.SIGHUP)
	defer signal.Stop(hup)
	for {
		select {
		case <-ctx.Done():
			return nil
		case <-hup:
			if err := d.opts.Notifier.Reloading(); err != nil {
				d.logger.Warn("notifying systemd", "err", err)
			}
			d.Reload()
			if err := d.opts.Notifier.Ready(d.verdict(d.sources).Summary()); err != nil {
				d.logger.Warn("notifying systemd", "err", err)
			}
		}
	}
}

// Reload loads the configuration file again and swaps it in if it is valid.
func (d *Daemon) Reload() bool {
	cfg, err := config.Load(d.opts.ConfigFile)
	if err == nil {
		cfg, err = d.opts.ApplyFlags(cfg)
	}
	if err != nil {
		d.reloads.Record(false, time.Now())
		d.logger.Error("configuration reload refused; keeping the running configuration", "err", err)
		return false
	}
	if d.stepdown != nil {
		sd := cfg.Stepdown.Resolve(d.opts.Env.Getenv) // as at the start, or every reload would look like a socket change
		if _, err := d.stepdown.Reload(sd); err != nil {
			d.reloads.Record(false, time.Now())
			d.logger.Error("configuration reload refused; keeping the running configuration", "err", err)
			return false
		}
	}
	if d.announcer != nil {
		d.announcer.SetConfig(cfg.Stepdown.Policy)
	}
	var later []string
	for _, key := range config.Changed(d.started, cfg) {
		if !config.Reloadable(key) {
			later = append(later, key)
		}
	}
	if len(later) > 0 {
		d.logger.Warn("configuration reloaded, but these settings take effect only at the next restart",
			"settings", strings.Join(later, ", "), "file", d.opts.ConfigFile)
	}
	d.cfg.Store(cfg)
	d.reloads.Record(true, time.Now())
	d.logger.Info("configuration reloaded", "file", d.opts.ConfigFile)
	return true
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

// statusInterval is how often systemd's status line is looked at.
const statusInterval = 10 * time.Second

// systemdBeats time the watchdog's pings (every half its interval) and the
// status line on the daemon's pulse; nil: a ticker of their own.
type systemdBeats struct {
	watchdog, status <-chan struct{}
}

// beatOn returns a channel that receives every period of pl, or up to half
// of it sooner on a wake-up of pl's other work (a beat not yet taken is not
// doubled).
func beatOn(pl *pulse.Pulse, period time.Duration) <-chan struct{} {
	c := make(chan struct{}, 1)
	pl.Every(period, func() {
		select {
		case c <- struct{}{}:
		default:
		}
	})
	return c
}
