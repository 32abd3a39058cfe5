//go:build linux

package main

import (
	"context"
	"fmt"
	"log/slog"
	"os"
	"runtime"

	"github.com/alecthomas/kingpin/v2"
	"github.com/prometheus/common/promslog"
	"github.com/prometheus/exporter-toolkit/web/kingpinflag"

	"github.com/clockwatch/clockwatch/internal/config"
	"github.com/clockwatch/clockwatch/internal/daemon"
	"github.com/clockwatch/clockwatch/internal/host"
	kubeclient "github.com/clockwatch/clockwatch/internal/kubernetes"
	"github.com/clockwatch/clockwatch/internal/procs"
	"github.com/clockwatch/clockwatch/internal/sched"
	"github.com/clockwatch/clockwatch/internal/sdnotify"
	"github.com/clockwatch/clockwatch/internal/transport/kubernetes"
)

// defaultListenAddress is clockwatch's port. The Prometheus exporter range
// 9100–9999 is fully allocated; 9847 is not the port of anything that
// usually runs beside clockwatch (node_exporter 9100, chrony_exporter 9123,
// Prometheus 9090, Alertmanager 9093/9094, Pushgateway 9091).
const defaultListenAddress = ":9847"

func addDaemonCommand(app *kingpin.Application, c *cli) subcommand {
	cmd := app.Command("run", "Run the daemon (the default command: its flags may be given without it).").Default()
	webFlags := kingpinflag.AddFlags(cmd, defaultListenAddress)
	metricsPath := cmd.Flag("web.telemetry-path", "Path under which to expose metrics.").Default("/metrics").String()
	check := cmd.Flag("config.check", "Check the configuration file and exit: 0 if valid, 1 with the problems if not.").Bool()
	switches := collectorFlags(cmd)
	c.chronyAddressFlag(cmd)
	maxProcs := cmd.Flag("runtime.gomaxprocs", "The number of CPUs the daemon's Go code runs on at once (GOMAXPROCS); 0: the Go runtime's default, every CPU the process may use. One (node_exporter's default) keeps a wake-up on one thread: most of what the daemon costs idle.").
		Envar("GOMAXPROCS").Default("1").Int()
	busyProcs := cmd.Flag("runtime.busy-gomaxprocs", "GOMAXPROCS while work other local users can cause competes with the stepdown announcements (HTTP beyond its pace, refused stepdown connections, writes to thousands of subscribers), until 30 s after it stops: a step's stepdown then never waits for that work's processor. At most the CPUs the process may use; at or below --runtime.gomaxprocs (or with it 0): never changed.").
		Default("2").Int()
	nice := cmd.Flag("runtime.nice", "The nice value the daemon lowers itself to at start, on every thread, where it may (CAP_SYS_NICE, or an RLIMIT_NICE that reaches it; otherwise it says so and runs as started); never raised: under the unit's Nice= it is already there. A step then reaches subscribers in time on a CPU other processes fill (docs/performance.md).").
		Default("-10").Int()
	var k8s kubeclient.Options
	cmd.Flag("kubernetes.node-name", "Keep the "+kubernetes.ConditionType+" condition on this Node and post Events on it for each stepdown and resume (docs/kubernetes.md); in a pod, from the downward API (spec.nodeName). Empty: off.").
		PlaceHolder("NODE").StringVar(&k8s.NodeName)
	cmd.Flag("kubernetes.kubeconfig", "kubeconfig file for --kubernetes.node-name outside a pod; by default the pod's service account.").
		PlaceHolder("FILE").StringVar(&k8s.Kubeconfig)
	return subcommand{clause: cmd, run: func(ctx context.Context) int {
		logger := c.logger()
		if *maxProcs < 0 {
			fmt.Fprintf(c.stderr, "clockwatch: --runtime.gomaxprocs must be 0 or more, got %d\n", *maxProcs)
			return 2
		}
		if *busyProcs < 0 {
			fmt.Fprintf(c.stderr, "clockwatch: --runtime.busy-gomaxprocs must be 0 or more, got %d\n", *busyProcs)
			return 2
		}
		var pr *procs.Procs
		if *maxProcs > 0 && c.setMaxProcs != nil {
			c.setMaxProcs(*maxProcs)
			pr = procs.New(c.setMaxProcs, *maxProcs, min(*busyProcs, runtime.NumCPU()), logger)
		}
		if *nice < sched.MinNice || *nice > sched.MaxNice {
			fmt.Fprintf(c.stderr, "clockwatch: --runtime.nice must be %d to %d, got %d\n", sched.MinNice, sched.MaxNice, *nice)
			return 2
		}
		configFile := c.configPath()
		flagged := daemon.Options{Collectors: switches(), ChronyAddress: c.chronyAddress}
		cfg, err := config.Load(configFile)
		if err == nil {
			cfg, err = flagged.ApplyFlags(cfg)
		}
		if *check {
			if err != nil {
				fmt.Fprintln(c.stderr, err)
				return 1
			}
			name := configFile
			if name == "" {
				name = "(no file: defaults)"
			}
			fmt.Fprintf(c.stdout, "%s: configuration is valid\n", name)
			return 0
		}
		if c.threads != nil {
			// Before the daemon's goroutines start: the threads the Go
			// runtime makes later inherit the value from their creator.
			r, err := sched.Lower(c.threads, *nice)
			switch {
			case err != nil:
				logger.Warn("scheduling priority unchanged", "err", err)
			case r.Denied:
				logger.Warn("scheduling priority: " + r.String())
			default:
				logger.Info("scheduling priority: " + r.String())
			}
		}
		if err != nil {
			logger.Error("cannot start with this configuration", "err", err)
			return 1
		}
		env, own, err := daemonDirs(c.getenv, c.uid, cfg.Stepdown.Socket, cfg.Journal.Dir)
		if err != nil {
			logger.Error("cannot start: no directory to keep state and sockets in", "err", err)
			return 1
		}
		for _, d := range own {
			logger.Info("not root: using this user's own directory, where its subcommands look too", "dir", d.dir, "instead_of", d.instead, "uid", c.uid)
		}
		notifier, err := sdnotify.FromEnv(c.getenv)
		if err != nil {
			logger.Warn("not notifying systemd", "err", err)
			notifier = nil
		}
		watchdog, err := sdnotify.WatchdogInterval(c.getenv, os.Getpid())
		if err != nil {
			logger.Warn("systemd watchdog off", "err", err)
		}
		d := daemon.New(cfg, daemon.Options{
			Notifier:         notifier,
			WatchdogInterval: watchdog,
			ConfigFile:       configFile,
			Web:              webFlags,
			MetricsPath:      *metricsPath,
			Collectors:       flagged.Collectors,
			ChronyAddress:    flagged.ChronyAddress,
			Kubernetes:       k8s,
			Env:              host.Env{Getenv: env, PID: os.Getpid()},
			Procs:            pr,
		}, logger)
		if err := d.Run(ctx); err != nil {
			logger.Error("clockwatch stopped", "err", err)
			return 1
		}
		logger.Info("clockwatch stopped")
		return 0
	}}
}

// logger builds the process logger from the --log.* flags.
func (c *cli) logger() *slog.Logger {
	lvl := promslog.NewLevel()
	_ = lvl.Set(c.logLevel) // the flag is an enum of valid levels
	fmt := promslog.NewFormat()
	_ = fmt.Set(c.logFormat)
	return promslog.New(&promslog.Config{Level: lvl, Format: fmt, Writer: c.stderr})
}

// collectorFlags declares --[no-]collector.<name> for every optional
// collector and returns a function giving the switches the user set.
func collectorFlags(cmd *kingpin.CmdClause) func() daemon.Collectors {
	type flag struct {
		value, set *bool
	}
	flags := map[string]flag{}
	for _, k := range daemon.OptionalCollectors() {
		f := flag{set: new(bool)}
		f.value = cmd.Flag("collector."+k.Name, k.Help+" Overrides the configuration file; default: as the file says.").
			IsSetByUser(f.set).Bool()
		flags[k.Name] = f
	}
	return func() daemon.Collectors {
		c := daemon.Collectors{}
		for name, f := range flags {
			if *f.set {
				c[name] = *f.value
			}
		}
		return c
	}
}
