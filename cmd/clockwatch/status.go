//go:build linux

package main

import (
	"context"
	"fmt"
	"os"
	"time"

	"github.com/alecthomas/kingpin/v2"

	"github.com/clockwatch/clockwatch/internal/config"
	"github.com/clockwatch/clockwatch/internal/health"
	"github.com/clockwatch/clockwatch/internal/hostclock"
	"github.com/clockwatch/clockwatch/internal/journal"
	"github.com/clockwatch/clockwatch/internal/kernel"
	"github.com/clockwatch/clockwatch/internal/step"
	"github.com/clockwatch/clockwatch/internal/timesources"
	"github.com/clockwatch/clockwatch/stepdown"
)

func addStatusCommand(app *kingpin.Application, c *cli) subcommand {
	cmd := app.Command("status", "Print a one-screen verdict of this node's clock health and exit 0 (OK), 1 (WARNING), 2 (CRITICAL) or 3 (UNKNOWN).")
	c.chronyAddressFlag(cmd)
	recent := cmd.Flag("steps.since", "Report clock steps from the event journal this recent.").Default("1h").Duration()
	verbose := cmd.Flag("verbose", "Also print the figures a bug report needs (the wall−boot gap step detection watches).").Short('v').Bool()
	return subcommand{clause: cmd, run: func(ctx context.Context) int {
		cfg, err := c.config()
		if err != nil {
			fmt.Fprintln(c.stderr, err)
			return int(health.Unknown)
		}
		f := health.Gather(hostclock.SysClocks{}, hostclock.SysTimex{})
		reports := timesources.Status(ctx, cfg, timesources.Env{Timex: hostclock.SysTimex{}, Proc: os.DirFS("/proc"), Getenv: c.getenv})
		for _, r := range reports {
			f.AddSource(r.Reading, r.Lines...)
			f.Notes = append(f.Notes, r.Notes...)
		}
		f.RecentSteps = recentSteps(cfg.Journal.Dir, *recent, time.Now())
		v := health.Judge(f, cfg.Health.Thresholds())
		v = withUndisciplined(v, f.Kernel, timesources.Disciplined(reports), cfg.Stepdown)
		// First what lock holders are being told, asked from the daemon.
		var hello stepdown.Message
		var askErr error
		if cfg.Stepdown.Enabled {
			hello, askErr = askDaemon(ctx, cfg.Stepdown.Socket)
		}
		writeDaemonState(c.stdout, cfg.Stepdown.Config, hello, askErr, v, time.Now())
		write := health.Write
		if *verbose {
			write = health.WriteVerbose
		}
		if err := write(c.stdout, f, v); err != nil {
			fmt.Fprintln(c.stderr, err)
			return int(health.Unknown)
		}
		return int(v.Level)
	}}
}

// withUndisciplined adds to v, on a host nobody disciplines (no source that
// disciplines the clock answered, decided as the daemon decides), the line
// the daemon logs at start: its stepdown socket stays in stepdown for good.
func withUndisciplined(v health.Verdict, k *kernel.Timex, disciplined bool, sd config.Stepdown) health.Verdict {
	if w := health.UndisciplinedWarning(sd.Enabled, sd.Policy.Triggers); w != "" && health.NobodyDisciplines(disciplined, k) {
		v.Findings = append(v.Findings, health.Finding{Level: health.Warning, Reason: w})
		v.Level = max(v.Level, health.Warning)
	}
	return v
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
			//clockwatch:wallclock-ok a journaled step from any run, maybe before a reboot: only its wall time says how long ago it was
			out = append(out, health.RecentStep{Step: r.Event.Step, Leap: r.Event.Leap, Ago: now.Sub(r.Event.WallAfter)})
		}
	}
	return out
}
