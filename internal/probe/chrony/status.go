package chrony

import (
	"context"
	"io/fs"
	"time"

	"github.com/clockwatch/clockwatch/internal/timesource"
)

// StatusOnce asks chronyd once, as the daemon's poller would, for
// `clockwatch status`: its reading, its status lines (none when it did not
// answer) and its notes, the audit of the chrony.conf the running chronyd
// reads among them (proc is /proc).
func StatusOnce(ctx context.Context, cfg Config, proc fs.FS, now time.Time) (r timesource.Reading, lines []timesource.Line, notes []timesource.Note) {
	cl := NewClient(cfg, nil)
	defer cl.Close()
	ctx, cancel := context.WithTimeout(ctx, 2*cfg.Timeout)
	defer cancel()
	d, err := cl.Poll(ctx)
	err = cfg.Absence(err)
	snap := Snapshot{Polls: 1, Up: err == nil, Err: err, Data: d, HaveData: err == nil, LastSuccess: now}
	r = snap.Reading()
	r.Role = cfg.SourceRole()
	notes = append(snap.Notes(), AuditNotes(auditRunning(proc, cfg.ConfPath))...)
	if err != nil {
		return r, nil, notes
	}
	return r, d.StatusLines(), notes
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
