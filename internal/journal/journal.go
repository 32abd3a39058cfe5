package journal

import (
	"context"
	"log/slog"
	"sync"
	"sync/atomic"
	"time"

	"github.com/clockwatch/clockwatch/internal/host"
	"github.com/clockwatch/clockwatch/internal/step"
)

// Options are the journal's collaborators; zero values give the real ones.
type Options struct {
	// Logger receives the warnings; nil discards them.
	Logger *slog.Logger
	// BootID returns this boot's id; nil is host.BootID.
	BootID func() (string, error)
	// Getenv resolves an empty Config.Dir; nil is an empty environment (the
	// journal never reads the process's).
	Getenv func(string) string
	// FS is where the files are written; nil is the real file system. The
	// fault suite passes a FaultFS (faultfs_test.go) to crash at every durable write.
	FS FS
}

// Journal appends events and persists the state. Its methods are safe for
// concurrent use.
type Journal struct {
	cfg    Config
	log    *slog.Logger
	fs     FS
	bootID string

	mu    sync.Mutex
	f     File
	size  int64
	state persisted
	err   error // the last persistence error, nil when persisting
	// boot is a new boot's increment not yet in the journal (the journal
	// could not be written at Open); it is written before the next event.
	boot bool

	persistent atomic.Bool
	// failed tells Run that persistence failed (from any method), so that
	// it retries only while it fails: a healthy journal has no timer.
	failed chan struct{}
}

// Open loads the persisted state and opens the journal for appending; an
// empty cfg.Dir is resolved from the environment (Resolve). It never fails:
// without a writable directory the Journal runs in memory and Persistent
// reports false.
//
// The epoch loaded is the largest of state.json's and every journal line's,
// so losing state.json cannot make it go back. After a reboot (a new boot id)
// the epoch is incremented, clockwatch could not watch the clock while the
// machine was down, and the increment is written to the journal (a "boot"
// line) before state.json, so it is recoverable from either.
func Open(cfg Config, opts Options) *Journal {
	getenv := opts.Getenv
	if getenv == nil {
		getenv = func(string) string { return "" }
	}
	j := &Journal{cfg: cfg.Resolve(getenv), log: opts.Logger, fs: opts.FS, failed: make(chan struct{}, 1)}
	if j.log == nil {
		j.log = slog.New(slog.DiscardHandler)
	}
	if j.fs == nil {
		j.fs = OSFS{}
	}
	readBootID := opts.BootID
	if readBootID == nil {
		readBootID = host.BootID
	}
	id, err := readBootID()
	if err != nil {
		j.log.Warn("Cannot read the boot id; a reboot will not be told from a restart", "err", err)
	}
	j.bootID = id

	j.state = j.load()
	if j.state.BootID != id {
		// BOOTTIME restarted (or the boot is unknown): a saved gap means
		// nothing now.
		j.state.Gap, j.state.GapBoot = 0, 0
	}
	if j.state.BootID != "" && id != "" && j.state.BootID != id {
		j.state.Epoch = j.nextEpoch(j.state.Epoch)
		j.boot = true
		j.log.Info("New boot since the last run: clock epoch incremented", "epoch", j.state.Epoch)
	}
	j.state.BootID = id

	j.mu.Lock()
	defer j.mu.Unlock()
	if err := j.persistLocked(nil, nil); err != nil {
		j.failLocked(err)
		return j
	}
	j.persistent.Store(true)
	return j
}

// Dir returns the state directory in use.
func (j *Journal) Dir() string { return j.cfg.Dir }

// BootID returns this boot's id ("" when it could not be read).
func (j *Journal) BootID() string { return j.bootID }

// Persistent reports whether events and the epoch are being persisted.
func (j *Journal) Persistent() bool { return j.persistent.Load() }

// Err returns why the journal is not persisting, or nil.
func (j *Journal) Err() error {
	j.mu.Lock()
	defer j.mu.Unlock()
	return j.err
}

// AppendThen writes e to the journal, fsyncs it, and persists the state.
// When persistence fails it keeps the state in memory and returns the error
// (once per failure streak it is also logged). The event line alone makes
// the step, its epoch and the baseline after it durable; state.json
// follows. It calls durable (unless nil) as soon as the event line is
// fsync'd, before state.json is replaced: what durable announces can
// no longer be lost (the line alone holds the step, its epoch and the
// baseline), and it waits one fsync instead of three. When the line cannot
// be written, durable is called after the failure is recorded (Err says
// so). durable runs with the journal locked: it must not call the Journal.
func (j *Journal) AppendThen(e step.Event, durable func(step.Event)) error {
	j.mu.Lock()
	defer j.mu.Unlock()
	j.state.Epoch = max(j.state.Epoch, e.Epoch)
	j.state.Seq = max(j.state.Seq, e.Seq)
	if e.Boot != 0 && e.Boot >= j.state.GapBoot {
		j.state.Gap, j.state.GapBoot = e.WallAfter.UnixNano()-e.Boot, e.Boot
	}
	called := false
	after := func() {
		if durable != nil && !called {
			called = true
			durable(e)
		}
	}
	if err := j.persistLocked(&e, after); err != nil {
		j.failLocked(err)
		after()
		return err
	}
	j.recoveredLocked()
	return nil
}

// Retry tries to persist the state again after a failure; it returns the
// error that remains, nil once persisting. Run calls it periodically, so
// that a state directory that has room again is used without waiting for an
// event.
func (j *Journal) Retry() error {
	j.mu.Lock()
	defer j.mu.Unlock()
	if j.err == nil {
		return nil
	}
	if err := j.persistLocked(nil, nil); err != nil {
		j.failLocked(err)
		return err
	}
	j.recoveredLocked()
	return nil
}

func (j *Journal) recoveredLocked() {
	if j.err != nil {
		j.log.Info("Event journal is persisting again", "dir", j.cfg.Dir, "epoch", j.state.Epoch)
	}
	j.err = nil
	j.persistent.Store(true)
}

// persistLocked writes what is pending, in the order that keeps the epoch
// recoverable: a new boot's increment line, then the event e (if any), each
// fsync'd, then state.json.
func (j *Journal) persistLocked(e *step.Event, afterLine func()) error {
	if err := j.openLocked(); err != nil {
		return err
	}
	if j.boot {
		line := appendBootLine(nil, j.bootID, j.state.Epoch, j.state.Seq)
		if err := j.writeLineLocked(line); err != nil {
			return err
		}
		j.boot = false
	}
	if e != nil {
		if err := j.writeLineLocked(appendLine(nil, j.bootID, *e)); err != nil {
			return err
		}
		afterLine()
	}
	return j.writeStateLocked()
}

func (j *Journal) failLocked(err error) {
	if j.f != nil {
		j.f.Close()
		j.f = nil
	}
	if j.err == nil {
		j.log.Error("Running without persistence: step events and the clock epoch are not saved across restarts",
			"dir", j.cfg.Dir, "err", err,
			"fix", "make the state directory writable by clockwatch's user (systemd: StateDirectory=clockwatch) or set journal.dir")
	}
	j.err = err
	j.persistent.Store(false)
	select {
	case j.failed <- struct{}{}:
	default:
	}
}

// RetryInterval is how often Run tries again to persist after a failure.
const RetryInterval = 10 * time.Second

// Run appends the events received until ctx is done or events is closed,
// and hands each to forward (nil: none) once it is appended: what forward
// announces is durable, or Err says why not. While persistence fails, it
// retries every RetryInterval; while it works, Run has no timer (an idle
// daemon wakes for nothing). Failures are logged and reported by
// Persistent, never returned.
func (j *Journal) Run(ctx context.Context, events <-chan step.Event, forward func(step.Event)) error {
	defer j.Close()
	if forward == nil {
		forward = func(step.Event) {}
	}
	// retry runs only while persistence fails.
	t := time.NewTimer(RetryInterval)
	t.Stop()
	defer t.Stop()
	var retry <-chan time.Time
	for {
		if !j.Persistent() && retry == nil {
			t.Reset(RetryInterval)
			retry = t.C
		}
		select {
		case <-ctx.Done():
			// Keep what is already queued.
			for {
				select {
				case e, ok := <-events:
					if !ok {
						return nil
					}
					_ = j.AppendThen(e, forward)
				default:
					return nil
				}
			}
		case <-j.failed:
			// The loop's head arms the retry.
		case <-retry:
			retry = nil
			_ = j.Retry()
		case e, ok := <-events:
			if !ok {
				return nil
			}
			_ = j.AppendThen(e, forward)
		}
	}
}

// Close closes the journal file.
func (j *Journal) Close() error {
	j.mu.Lock()
	defer j.mu.Unlock()
	if j.f == nil {
		return nil
	}
	err := j.f.Close()
	j.f = nil
	return err
}
