package main

import (
	"context"
	"fmt"
	"os"
	"time"

	"github.com/alecthomas/kingpin/v2"

	"github.com/clockwatch/clockwatch/config"
	"github.com/clockwatch/clockwatch/health"
	"github.com/clockwatch/clockwatch/journal"
	"github.com/clockwatch/clockwatch/probe"
	"github.com/clockwatch/clockwatch/probe/chrony"
	"github.com/clockwatch/clockwatch/probe/ntpd"
	"github.com/clockwatch/clockwatch/step"
)

func addStatusCommand(app *kingpin.Application, c *cli) subcommand {
	cmd := app.Command("status", "Print a one-screen verdict of this node's clock health and exit 0 (OK), 1 (WARNING), 2 (CRITICAL) or 3 (UNKNOWN).")
	recent := cmd.Flag("steps.since", "Report clock steps from the event journal this recent.").Default("1h").Duration()
	return subcommand{clause: cmd, run: func(ctx context.Context) int {
		cfg, err := config.Load(c.configFile)
		if err != nil {
			fmt.Fprintln(c.stderr, err)
			return int(health.Unknown)
		}
		f := health.Gather(probe.SysClocks{}, probe.SysTimex{})
		if cfg.Chrony.Enabled {
			pollChrony(ctx, cfg.Chrony, &f)
		}
		if cfg.Ntpd.Enabled {
			pollNtpd(ctx, cfg.Ntpd, &f)
		}
		f.RecentSteps = recentSteps(cfg.Journal.Resolve(os.Getenv).Dir, *recent, time.Now())
		v := health.Judge(f, cfg.Health)
		if err := health.Write(c.stdout, f, v); err != nil {
			fmt.Fprintln(c.stderr, err)
			return int(health.Unknown)
		}
		return int(v.Level)
	}}
}

// pollChrony asks chronyd once, as the daemon's poller would, and audits
// its configuration.
func pollChrony(ctx context.Context, cfg chrony.Config, f *health.Facts) {
	cl := chrony.NewClient(cfg, nil)
	defer cl.Close()
	ctx, cancel := context.WithTimeout(ctx, 2*cfg.Timeout)
	defer cancel()
	d, err := cl.Poll(ctx)
	snap := chrony.Snapshot{Polls: 1, Up: err == nil, Err: err, Data: d, HaveData: err == nil, LastSuccess: time.Now()}
	if cfg.ConfPath != "" {
		snap.Audit, snap.AuditErr = chrony.AuditFile(cfg.ConfPath)
	}
	r := snap.Reading()
	r.Role = cfg.SourceRole()
	if err != nil {
		f.AddSource(r)
		return
	}
	f.AddSource(r, d.StatusLines()...)
}

// pollNtpd asks ntpd once, as the daemon's poller would.
func pollNtpd(ctx context.Context, cfg ntpd.Config, f *health.Facts) {
	cl := ntpd.NewClient(cfg.Address, cfg.Timeout)
	defer cl.Close()
	ctx, cancel := context.WithTimeout(ctx, 2*cfg.Timeout)
	defer cancel()
	d, err := cl.Poll(ctx)
	r := ntpd.Snapshot{Polls: 1, Up: err == nil, Err: err, Data: d, HaveData: err == nil, LastSuccess: time.Now()}.Reading()
	r.Role = cfg.SourceRole()
	f.AddSource(r)
}

// recentSteps reads the steps of the last window from the journal; a journal
// that does not exist (yet) has none.
func recentSteps(dir string, window time.Duration, now time.Time) []health.RecentStep {
	recs, _, err := journal.Read(dir, now.Add(-window))
	if err != nil {
		return nil
	}
	var out []health.RecentStep
	for _, r := range recs {
		if r.Event.Type == step.TypeStep {
			out = append(out, health.RecentStep{Step: r.Event.Step, Leap: r.Event.Leap, Ago: now.Sub(r.Event.WallAfter)})
		}
	}
	return out
}
