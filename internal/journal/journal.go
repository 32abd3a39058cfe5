package journal

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"math"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/clockwatch/clockwatch/internal/host"
	"github.com/clockwatch/clockwatch/internal/kernel"
	"github.com/clockwatch/clockwatch/internal/safefile"
	"github.com/clockwatch/clockwatch/internal/step"
)

// ConfigKey is the top-level YAML key this package's Config is expected under.
const ConfigKey = "journal"

// File names under the state directory.
const (
	EventsFile  = "events.jsonl"
	RotatedFile = "events.jsonl.1"
	StateFile   = "state.json"
)

// DefaultDir is the state directory when neither the configuration nor
// systemd names one.
const DefaultDir = "/var/lib/clockwatch"

// Config says where the journal lives and how large it may grow.
type Config struct {
	// Dir is the state directory. Empty means systemd's
	// StateDirectory=clockwatch (the STATE_DIRECTORY environment variable)
	// when set, else DefaultDir; see Resolve.
	Dir string `yaml:"dir"`
	// MaxBytes bounds events.jsonl; when an event would pass it, the file
	// becomes events.jsonl.1 (replacing the older one) and a new one starts,
	// so the journal holds at most twice this.
	MaxBytes int64 `yaml:"max_bytes"`
}

// MaxMaxBytes bounds journal.max_bytes: the journal (twice this) is read
// whole at every start.
const MaxMaxBytes = 256 << 20

// DefaultConfig returns the state directory left to Resolve and 1 MiB
// (about 3,000 events per file).
func DefaultConfig() Config { return Config{MaxBytes: 1 << 20} }

// Resolve fills an empty Dir: the first path of STATE_DIRECTORY (which
// systemd sets for StateDirectory=), read with getenv, else DefaultDir.
func (c Config) Resolve(getenv func(string) string) Config {
	if c.Dir == "" {
		c.Dir, _, _ = strings.Cut(getenv("STATE_DIRECTORY"), ":")
	}
	if c.Dir == "" {
		c.Dir = DefaultDir
	}
	return c
}

// Validate reports the first invalid field, named by its YAML path.
func (c Config) Validate() error {
	switch {
	case c.Dir != "" && !filepath.IsAbs(c.Dir):
		return fmt.Errorf("%s.dir: must be an absolute path, got %q", ConfigKey, c.Dir)
	case c.MaxBytes < 4096 || c.MaxBytes > MaxMaxBytes:
		return fmt.Errorf("%s.max_bytes: must be between 4096 and %d (256 MiB; the journal is read whole at start), got %d", ConfigKey, MaxMaxBytes, c.MaxBytes)
	}
	return nil
}

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

// MaxLineBytes bounds one journal line (an event takes about 330 bytes): a
// longer line is skipped with a warning without being held in memory, so a
// torn or hostile line of any size costs neither the daemon nor `clockwatch
// events` more than this.
const MaxLineBytes = 64 << 10

// maxStateBytes bounds state.json (about 120 bytes when written by us).
const maxStateBytes = 64 << 10

// typeBoot is the journal line that records the epoch increment of a new
// boot, so that losing state.json cannot undo it. It is not a step.Event:
// Read does not return it.
const typeBoot = "boot"

// persisted is the content of state.json.
type persisted struct {
	Epoch   uint64 `json:"epoch"`
	Seq     uint64 `json:"seq"`
	BootID  string `json:"boot_id"`
	Gap     int64  `json:"gap_ns,omitempty"`
	GapBoot int64  `json:"gap_boot_ns,omitempty"`
}

// sanitize refuses, field by field, values no run of clockwatch writes: an
// epoch or sequence past step.MaxEpoch (recovered from the journal instead),
// or a baseline that puts the wall clock before 1970 or past 2262, or a
// negative BOOTTIME (dropped: the next start cannot see a step made while it
// was down, and says so). It returns what was refused.
func (p *persisted) sanitize() []string {
	var bad []string
	if p.Epoch > step.MaxEpoch {
		bad = append(bad, fmt.Sprintf("epoch %d is past 2^53: no clock steps that often", p.Epoch))
		p.Epoch = 0
	}
	if p.Seq > step.MaxEpoch {
		bad = append(bad, fmt.Sprintf("seq %d is past 2^53", p.Seq))
		p.Seq = 0
	}
	switch {
	case p.GapBoot < 0:
		bad = append(bad, fmt.Sprintf("gap_boot_ns %d is negative: BOOTTIME never is", p.GapBoot))
	case p.GapBoot == 0 && p.Gap != 0:
		bad = append(bad, fmt.Sprintf("gap_ns %d without gap_boot_ns", p.Gap))
	case p.GapBoot > 0 && p.Gap < -p.GapBoot:
		bad = append(bad, fmt.Sprintf("gap_ns %d with gap_boot_ns %d puts the wall clock before 1970", p.Gap, p.GapBoot))
	case p.GapBoot > 0 && p.Gap > math.MaxInt64-p.GapBoot:
		bad = append(bad, fmt.Sprintf("gap_ns %d with gap_boot_ns %d puts the wall clock past 2262", p.Gap, p.GapBoot))
	default:
		return bad
	}
	p.Gap, p.GapBoot = 0, 0
	return bad
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

// nextEpoch increments an epoch, saturating loudly at step.MaxEpoch.
func (j *Journal) nextEpoch(e uint64) uint64 {
	if e >= step.MaxEpoch {
		j.log.Error("Clock epoch is at its maximum (2^53) and stays there: clients can no longer tell steps apart by the epoch",
			"epoch", e, "fix", "stop clockwatch, remove the state directory's files, and restart every client")
		return step.MaxEpoch
	}
	return e + 1
}

// load reads state.json and the journal, and keeps the larger epoch and seq.
// A value no run writes (an epoch past 2^53, a baseline before 1970) is
// refused, logged with the file and the value.
func (j *Journal) load() persisted {
	var st persisted
	path := filepath.Join(j.cfg.Dir, StateFile)
	switch b, err := readFile(j.fs, path, maxStateBytes); {
	case errors.Is(err, os.ErrNotExist):
	case err != nil:
		j.log.Warn("Cannot read the persisted clock epoch; recovering it from the journal", "path", path, "err", err)
	default:
		if err := json.Unmarshal(b, &st); err != nil {
			j.log.Warn("Persisted clock epoch is corrupt; recovering it from the journal", "path", path, "err", err)
			st = persisted{}
		} else if bad := st.sanitize(); len(bad) > 0 {
			j.log.Error("Persisted state has values no run writes; refused them (the epoch comes from the journal, a refused baseline is dropped)",
				"path", path, "refused", strings.Join(bad, "; "))
		}
	}
	var last line
	warnings, err := readLines(j.fs, j.cfg.Dir, func(l line) {
		st.Epoch = max(st.Epoch, l.rec.Event.Epoch)
		st.Seq = max(st.Seq, l.rec.Event.Seq)
		last = l
	})
	if err != nil {
		j.log.Warn("Cannot read the event journal", "dir", j.cfg.Dir, "err", err)
	}
	for i, w := range warnings {
		if i == 10 {
			j.log.Warn("More unreadable journal lines", "count", len(warnings)-i)
			break
		}
		j.log.Warn("Event journal line skipped", "warning", w)
	}
	switch {
	case last.rec.BootID == "":
	case st.BootID == "" || (last.rec.BootID == j.bootID && st.BootID != j.bootID):
		// state.json is lost, or older than the journal's record of this
		// boot (a crash between the two writes): the journal says which
		// boot was counted last.
		st.BootID, st.Gap, st.GapBoot = last.rec.BootID, 0, 0
	}
	if e := last.rec.Event; !last.boot && last.rec.BootID == st.BootID && e.Boot != 0 && e.Boot >= st.GapBoot {
		// The last event's gap is the newest baseline: an event line holds
		// the step, its epoch and the gap after it in one write.
		st.Gap, st.GapBoot = e.WallAfter.UnixNano()-e.Boot, e.Boot
	}
	return st
}

// State returns the epoch and sequence to start the Detector from.
func (j *Journal) State() step.State {
	j.mu.Lock()
	defer j.mu.Unlock()
	return step.State{Epoch: j.state.Epoch, Seq: j.state.Seq, Gap: j.state.Gap, GapBoot: j.state.GapBoot}
}

// SaveBaseline persists the REALTIME−BOOTTIME gap of a sample with the
// detector's state after that sample, so that the next start in this boot can
// tell whether the clock was stepped while clockwatch was not running. The
// daemon saves it after the first sample's events are appended and when it
// stops; every event saves it too. The epoch and sequence saved are the
// larger of the journal's and st's: a baseline is never written with an
// epoch older than the steps before it, even when the bus dropped their
// events. A zero sample is ignored.
func (j *Journal) SaveBaseline(s kernel.Sample, st step.State) {
	if s.Boot == 0 {
		return
	}
	j.mu.Lock()
	defer j.mu.Unlock()
	j.state.Epoch = max(j.state.Epoch, st.Epoch)
	j.state.Seq = max(j.state.Seq, st.Seq)
	if s.Boot >= j.state.GapBoot {
		j.state.Gap, j.state.GapBoot = s.Real-s.Boot, s.Boot
	}
	if err := j.persistLocked(nil, nil); err != nil {
		j.failLocked(err)
		return
	}
	j.recoveredLocked()
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

// openLocked creates the directory and opens events.jsonl for appending,
// completing or cutting off a torn last line.
func (j *Journal) openLocked() error {
	if j.f != nil {
		return nil
	}
	if err := mkdirDurable(j.fs, j.cfg.Dir); err != nil {
		return fmt.Errorf("creating the state directory: %w", err)
	}
	path := filepath.Join(j.cfg.Dir, EventsFile)
	_, statErr := os.Lstat(path)
	// Not through a link (the torn-tail repair truncated its target), and
	// refusing a FIFO or a device rather than blocking on it.
	f, err := j.fs.OpenFile(path, os.O_RDWR|os.O_CREATE|safefile.Flags, 0o640)
	f, err = safefile.Checked("event journal", path, f, err)
	if err != nil {
		return fmt.Errorf("opening the event journal: %w", err)
	}
	if errors.Is(statErr, os.ErrNotExist) {
		// A new file's name is durable only once its directory is synced:
		// without this, a power cut after the first line was fsync'd and
		// announced (at the first start, or after a rotation) could lose
		// the whole file.
		if err := j.fs.SyncDir(j.cfg.Dir); err != nil {
			f.Close()
			return fmt.Errorf("syncing the state directory: %w", err)
		}
	}
	size, err := repairTail(f)
	if err != nil {
		f.Close()
		return fmt.Errorf("repairing %s: %w", path, err)
	}
	switch {
	case size.completed:
		j.log.Warn("Event journal's last line lacked its newline (a crash mid-write); it parses, so it was kept and completed", "path", path)
	case size.cut > 0:
		j.log.Warn("Event journal ended in a torn line (a crash mid-write); cut it off", "path", path, "bytes", size.cut)
	}
	if _, err := f.Seek(0, io.SeekEnd); err != nil {
		f.Close()
		return fmt.Errorf("seeking to the end of %s: %w", path, err)
	}
	j.f, j.size = f, size.kept
	return nil
}

// mkdirDurable creates dir and its missing parents, syncing the parent of
// each directory it creates: a directory's entry survives a power cut only
// once its parent is synced, and the state directory going would take the
// epoch with it. An existing directory costs a stat.
func mkdirDurable(fs FS, dir string) error {
	var missing []string
	for d := filepath.Clean(dir); ; d = filepath.Dir(d) {
		if _, err := os.Stat(d); err == nil || d == filepath.Dir(d) {
			break
		}
		missing = append(missing, d)
	}
	if len(missing) == 0 {
		return nil
	}
	if err := fs.MkdirAll(dir, 0o750); err != nil {
		return err
	}
	for _, d := range missing {
		if err := fs.SyncDir(filepath.Dir(d)); err != nil {
			return fmt.Errorf("syncing %s: %w", filepath.Dir(d), err)
		}
	}
	return nil
}

type tail struct {
	kept, cut int64
	completed bool
}

// repairTail makes f end in a newline: a last line that lacks only its
// newline but parses (the crash came between the record and its newline) is
// kept and completed; anything else after the last newline is cut off.
//
// The repair is not fsync'd on its own: the next line's fsync makes it
// durable with that line, and a repair a power cut loses before then is made
// again at the next start (the power-cut suite checks that every sync of
// this package is needed, TestEverySyncIsNeeded).
func repairTail(f File) (tail, error) {
	st, err := f.Stat()
	if err != nil {
		return tail{}, err
	}
	size := st.Size()
	if size == 0 {
		return tail{}, nil
	}
	// Read backwards in chunks to the last newline.
	buf := make([]byte, 4096)
	end := size
	keep := int64(0)
	for end > 0 {
		n := min(int64(len(buf)), end)
		if _, err := f.ReadAt(buf[:n], end-n); err != nil {
			return tail{}, err
		}
		if i := bytes.LastIndexByte(buf[:n], '\n'); i >= 0 {
			keep = end - n + int64(i) + 1
			break
		}
		end -= n
	}
	if keep == size {
		return tail{kept: size}, nil
	}
	if rest := size - keep; rest <= MaxLineBytes {
		b := make([]byte, rest)
		if _, err := f.ReadAt(b, keep); err != nil {
			return tail{}, err
		}
		if _, err := parseLine(bytes.TrimSpace(b)); err == nil {
			if _, err := f.Seek(0, io.SeekEnd); err != nil {
				return tail{}, err
			}
			if _, err := f.Write([]byte{'\n'}); err != nil {
				return tail{}, err
			}
			return tail{kept: size + 1, completed: true}, nil
		}
	}
	if err := f.Truncate(keep); err != nil {
		return tail{}, err
	}
	return tail{kept: keep, cut: size - keep}, nil
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

func (j *Journal) writeLineLocked(line []byte) error {
	if j.size > 0 && j.size+int64(len(line)) > j.cfg.MaxBytes {
		if err := j.rotateLocked(); err != nil {
			return err
		}
	}
	n, err := j.f.Write(line)
	j.size += int64(n)
	if err != nil {
		return fmt.Errorf("writing the event journal: %w", err)
	}
	if err := j.f.Sync(); err != nil {
		return fmt.Errorf("syncing the event journal: %w", err)
	}
	return nil
}

func appendLine(b []byte, bootID string, e step.Event) []byte {
	b = append(b, `{"boot_id":`...)
	id, _ := json.Marshal(bootID)
	b = append(b, id...)
	b = append(b, ',')
	b = e.AppendJSONFields(b)
	return append(b, "}\n"...)
}

func appendBootLine(b []byte, bootID string, epoch, seq uint64) []byte {
	b = append(b, `{"boot_id":`...)
	id, _ := json.Marshal(bootID)
	b = append(b, id...)
	return fmt.Appendf(b, `,"type":%q,"seq":%d,"epoch":%d}`+"\n", typeBoot, seq, epoch)
}

func (j *Journal) rotateLocked() error {
	if err := j.f.Close(); err != nil {
		j.f = nil
		return fmt.Errorf("closing the event journal for rotation: %w", err)
	}
	j.f = nil
	from, to := filepath.Join(j.cfg.Dir, EventsFile), filepath.Join(j.cfg.Dir, RotatedFile)
	if err := j.fs.Rename(from, to); err != nil {
		return fmt.Errorf("rotating the event journal: %w", err)
	}
	// The line about to be written opens the new file and carries the
	// epoch, so the rotated file may go with the next rotation. The
	// directory sync that makes the new file's name durable (openLocked)
	// makes the rename durable with it; until then a power cut leaves the
	// old file where it was, complete.
	return j.openLocked()
}

// writeStateLocked replaces state.json atomically: a temporary file,
// fsync'd, renamed over the old one, then the directory fsync'd.
func (j *Journal) writeStateLocked() error {
	b, err := json.Marshal(j.state)
	if err != nil {
		return err
	}
	b = append(b, '\n')
	path := filepath.Join(j.cfg.Dir, StateFile)
	tmp, err := j.fs.CreateTemp(j.cfg.Dir, StateFile+".tmp*")
	if err != nil {
		return fmt.Errorf("writing the clock epoch: %w", err)
	}
	renamed := false
	defer func() {
		if !renamed {
			_ = j.fs.Remove(tmp.Name())
		}
	}()
	if _, err := tmp.Write(b); err != nil {
		tmp.Close()
		return fmt.Errorf("writing the clock epoch: %w", err)
	}
	if err := tmp.Sync(); err != nil {
		tmp.Close()
		return fmt.Errorf("syncing the clock epoch: %w", err)
	}
	if err := tmp.Close(); err != nil {
		return fmt.Errorf("writing the clock epoch: %w", err)
	}
	if err := j.fs.Chmod(tmp.Name(), 0o640); err != nil {
		return fmt.Errorf("writing the clock epoch: %w", err)
	}
	if err := j.fs.Rename(tmp.Name(), path); err != nil {
		return fmt.Errorf("replacing the clock epoch: %w", err)
	}
	renamed = true
	if err := j.fs.SyncDir(j.cfg.Dir); err != nil {
		return fmt.Errorf("syncing the state directory: %w", err)
	}
	return nil
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
