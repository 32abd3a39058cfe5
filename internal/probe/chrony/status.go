package chrony

import (
	"context"
	"io/fs"

	"github.com/clockwatch/clockwatch/internal/timesource"
)

// StatusOnce asks chronyd once, as the daemon's poller would, for
// `clockwatch status` (a timesource.StatusFunc): its reading, its status
// lines (none when it did not answer) and its notes, the audit of the
// chrony.conf the running chronyd reads (host.Proc) among them.
func StatusOnce(ctx context.Context, cfg Config, host timesource.Host) (timesource.Status, bool) {
	if !cfg.On() {
		return timesource.Status{}, false
	}
	cfg = cfg.Resolve(host.Env)
	cl := NewClient(cfg, nil)
	defer cl.Close()
	ctx, cancel := context.WithTimeout(ctx, 2*cfg.Timeout)
	defer cancel()
	d, err := cl.Poll(ctx)
	err = cfg.Absence(err)
	snap := Snapshot{Data: d, HaveData: err == nil}
	snap.Count(host.Now, host.Now, err)
	st := timesource.Status{Reading: snap.Reading(), Notes: append(snap.Notes(), AuditNotes(auditRunning(host.Proc, cfg.ConfPath))...)}
	st.Reading.Role = cfg.SourceRole()
	if err == nil {
		st.Lines = d.StatusLines()
	}
	return st, true
}

// auditRunning audits the chrony.conf the running chronyd reads (its -f,
// else confPath, the configured default), and nothing when no chronyd runs
// or the audit is off (confPath ""): a file nobody runs says nothing about
// this clock.
func auditRunning(proc fs.FS, confPath string) []Finding {
	if confPath == "" {
		return nil
	}
	path, running, err := RunningConf(proc, DefaultPIDFile, confPath)
	if err != nil {
		return []Finding{{Warning: true, Text: "Cannot tell which chrony.conf chronyd runs: " + err.Error() + "."}}
	}
	if !running {
		return nil
	}
	return AuditFindings(path)
}
