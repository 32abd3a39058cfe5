package main

import (
	"context"
	"fmt"
	"io/fs"
	"os"
	"time"

	"github.com/alecthomas/kingpin/v2"

	"github.com/clockwatch/clockwatch/internal/health"
	"github.com/clockwatch/clockwatch/internal/journal"
	"github.com/clockwatch/clockwatch/internal/probe"
	"github.com/clockwatch/clockwatch/internal/probe/chrony"
	"github.com/clockwatch/clockwatch/internal/probe/ntpd"
	"github.com/clockwatch/clockwatch/internal/probe/ptp"
	"github.com/clockwatch/clockwatch/internal/probe/timesyncd"
	"github.com/clockwatch/clockwatch/internal/step"
	"github.com/clockwatch/clockwatch/internal/stepdown/server"
)

func addStatusCommand(app *kingpin.Application, c *cli) subcommand {
	cmd := app.Command("status", "Print a one-screen verdict of this node's clock health and exit 0 (OK), 1 (WARNING), 2 (CRITICAL) or 3 (UNKNOWN).")
	recent := cmd.Flag("steps.since", "Report clock steps from the event journal this recent.").Default("1h").Duration()
	verbose := cmd.Flag("verbose", "Also print the figures a bug report needs (the wall−boot gap step detection watches).").Short('v').Bool()
	return subcommand{clause: cmd, run: func(ctx context.Context) int {
		cfg, err := c.config()
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
		if r, lines, ok := ptp.StatusOnce(ctx, cfg.PTP, time.Now()); ok {
			f.AddSource(r, lines...)
		}
		if r, lines, ok := timesyncd.StatusOnce(ctx, cfg.Timesyncd, time.Now()); ok {
			f.AddSource(r, lines...)
		}
		f.RecentSteps = recentSteps(cfg.Journal.Dir, *recent, time.Now())
		v := health.Judge(f, cfg.Health)
		v = withUndisciplined(v, f, cfg.Stepdown)
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

// withUndisciplined adds to v, on a host nobody disciplines, the line the
// daemon logs at start: its stepdown socket stays in stepdown for good.
func withUndisciplined(v health.Verdict, f health.Facts, sd server.Config) health.Verdict {
	if w := health.UndisciplinedWarning(sd); w != "" && health.NobodyDisciplines(f.DaemonAnswers(), f.Kernel) {
		v.Findings = append(v.Findings, health.Finding{Level: health.Warning, Reason: w})
		v.Level = max(v.Level, health.Warning)
	}
	return v
}

// auditRunningChrony audits the chrony.conf the running chronyd reads (its
// -f, else confPath, the configured default), and nothing when no chronyd
// runs or the audit is off (confPath ""): a file nobody runs says nothing
// about this clock.
func auditRunningChrony(proc fs.FS, confPath string) []chrony.Finding {
	if confPath == "" {
		return nil
	}
	path, running, err := chrony.RunningConf(proc, chrony.DefaultPIDFile, confPath)
	if err != nil {
		return []chrony.Finding{{Warning: true, Text: "Cannot tell which chrony.conf chronyd runs: " + err.Error() + "."}}
	}
	if !running {
		return nil
	}
	return chrony.AuditFindings(path)
}

// pollChrony asks chronyd once, as the daemon's poller would, with the
// audit of the chrony.conf it runs as the reading's notes.
func pollChrony(ctx context.Context, cfg chrony.Config, f *health.Facts) {
	cl := chrony.NewClient(cfg, nil)
	defer cl.Close()
	ctx, cancel := context.WithTimeout(ctx, 2*cfg.Timeout)
	defer cancel()
	d, err := cl.Poll(ctx)
	snap := chrony.Snapshot{Polls: 1, Up: err == nil, Err: err, Data: d, HaveData: err == nil, LastSuccess: time.Now()}
	r := snap.Reading()
	r.Role = cfg.SourceRole()
	f.Notes = append(f.Notes, snap.Notes()...)
	f.Notes = append(f.Notes, chrony.AuditNotes(auditRunningChrony(os.DirFS("/proc"), cfg.ConfPath))...)
	if err != nil {
		f.AddSource(r)
		return
	}
	f.AddSource(r, d.StatusLines()...)
}

// pollNtpd asks ntpd once, as the daemon's poller would: under "auto" an
// ntpd that does not answer is absent, and says nothing.
func pollNtpd(ctx context.Context, cfg ntpd.Config, f *health.Facts) {
	p := ntpd.NewPoller(cfg, nil)
	defer p.Close()
	ctx, cancel := context.WithTimeout(ctx, 2*cfg.Timeout)
	defer cancel()
	p.Poll(ctx)
	s := p.Snapshot()
	r := p.Reading()
	if r.IsAbsent() {
		return
	}
	if !s.HaveData {
		f.AddSource(r)
		return
	}
	f.AddSource(r, s.Data.StatusLines()...)
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
