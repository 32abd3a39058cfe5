package journal

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"

	"github.com/clockwatch/clockwatch/probe"
	"github.com/clockwatch/clockwatch/step"
)

// ConfigKey is the top-level YAML key this package's Config is expected under.
const ConfigKey = "journal"

// File names under the state directory.
const (
	EventsFile  = "events.jsonl"
	RotatedFile = "events.jsonl.1"
	StateFile   = "state.json"
)

// BootIDPath is where Linux tells the boot id.
const BootIDPath = "/proc/sys/kernel/random/boot_id"

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
	case c.MaxBytes < 4096:
		return fmt.Errorf("%s.max_bytes: must be at least 4096, got %d", ConfigKey, c.MaxBytes)
	}
	return nil
}

// Options are the journal's collaborators; zero values give the real ones.
type Options struct {
	// Logger receives the warnings; nil discards them.
	Logger *slog.Logger
	// BootID returns this boot's id; nil reads BootIDPath.
	BootID func() (string, error)
	// Getenv resolves an empty Config.Dir; nil is os.Getenv.
	Getenv func(string) string
}

// persisted is the content of state.json.
type persisted struct {
	Epoch   uint64 `json:"epoch"`
	Seq     uint64 `json:"seq"`
	BootID  string `json:"boot_id"`
	Gap     int64  `json:"gap_ns,omitempty"`
	GapBoot int64  `json:"gap_boot_ns,omitempty"`
}

// Journal appends events and persists the state. Its methods are safe for
// concurrent use.
type Journal struct {
	cfg    Config
	log    *slog.Logger
	bootID string

	mu    sync.Mutex
	f     *os.File
	size  int64
	state persisted
	err   error // the last persistence error, nil when persisting

	persistent atomic.Bool
}

// Open loads the persisted state and opens the journal for appending; an
// empty cfg.Dir is resolved from the environment (Resolve). It never fails: without a writable directory the Journal runs in memory and
// Persistent reports false.
//
// The epoch loaded is the larger of state.json's and the journal's last
// event's, so losing state.json cannot make it go back. After a reboot (a
// new boot id) the epoch is incremented: clockwatch could not watch the
// clock while the machine was down.
func Open(cfg Config, opts Options) *Journal {
	getenv := opts.Getenv
	if getenv == nil {
		getenv = os.Getenv
	}
	j := &Journal{cfg: cfg.Resolve(getenv), log: opts.Logger}
	if j.log == nil {
		j.log = slog.New(slog.DiscardHandler)
	}
	readBootID := opts.BootID
	if readBootID == nil {
		readBootID = ReadBootID
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
		j.state.Epoch++
		j.log.Info("New boot since the last run: clock epoch incremented", "epoch", j.state.Epoch)
	}
	j.state.BootID = id

	j.mu.Lock()
	defer j.mu.Unlock()
	if err := j.openLocked(); err != nil {
		j.failLocked(err)
		return j
	}
	if err := j.writeStateLocked(); err != nil {
		j.failLocked(err)
		return j
	}
	j.persistent.Store(true)
	return j
}

// ReadBootID reads this boot's id from BootIDPath.
func ReadBootID() (string, error) {
	b, err := os.ReadFile(BootIDPath)
	if err != nil {
		return "", fmt.Errorf("reading the boot id: %w", err)
	}
	return strings.TrimSpace(string(b)), nil
}

// load reads state.json and the journal, and keeps the larger epoch and seq.
func (j *Journal) load() persisted {
	var st persisted
	path := filepath.Join(j.cfg.Dir, StateFile)
	switch b, err := os.ReadFile(path); {
	case errors.Is(err, os.ErrNotExist):
	case err != nil:
		j.log.Warn("Cannot read the persisted clock epoch; recovering it from the journal", "path", path, "err", err)
	default:
		if err := json.Unmarshal(b, &st); err != nil {
			j.log.Warn("Persisted clock epoch is corrupt; recovering it from the journal", "path", path, "err", err)
			st = persisted{}
		}
	}
	recs, _, err := Read(j.cfg.Dir, zeroTime)
	if err != nil {
		j.log.Warn("Cannot read the event journal", "dir", j.cfg.Dir, "err", err)
	}
	var last Record
	for _, r := range recs {
		st.Epoch = max(st.Epoch, r.Event.Epoch)
		st.Seq = max(st.Seq, r.Event.Seq)
		last = r
	}
	if st.BootID == "" && last.BootID != "" {
		st.BootID = last.BootID
		if last.Event.Boot != 0 {
			st.Gap, st.GapBoot = last.Event.WallAfter.UnixNano()-last.Event.Boot, last.Event.Boot
		}
	}
	return st
}

// State returns the epoch and sequence to start the Detector from.
func (j *Journal) State() step.State {
	j.mu.Lock()
	defer j.mu.Unlock()
	return step.State{Epoch: j.state.Epoch, Seq: j.state.Seq, Gap: j.state.Gap, GapBoot: j.state.GapBoot}
}

// SaveBaseline persists the REALTIME−BOOTTIME gap of a sample, so that the
// next start in this boot can tell whether the clock was stepped while
// clockwatch was not running. The daemon saves it after its first sample and
// when it stops; every event saves it too. A zero sample is ignored.
func (j *Journal) SaveBaseline(s probe.Sample) {
	if s.Boot == 0 {
		return
	}
	j.mu.Lock()
	defer j.mu.Unlock()
	j.state.Gap, j.state.GapBoot = s.Real-s.Boot, s.Boot
	if !j.persistent.Load() {
		return
	}
	if err := j.writeStateLocked(); err != nil {
		j.failLocked(err)
	}
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
// cutting off a torn last line.
func (j *Journal) openLocked() error {
	if j.f != nil {
		return nil
	}
	if err := os.MkdirAll(j.cfg.Dir, 0o750); err != nil {
		return fmt.Errorf("creating the state directory: %w", err)
	}
	path := filepath.Join(j.cfg.Dir, EventsFile)
	f, err := os.OpenFile(path, os.O_RDWR|os.O_CREATE, 0o640)
	if err != nil {
		return fmt.Errorf("opening the event journal: %w", err)
	}
	size, err := cutTornTail(f)
	if err != nil {
		f.Close()
		return fmt.Errorf("repairing %s: %w", path, err)
	}
	if size.cut > 0 {
		j.log.Warn("Event journal ended in a torn line (a crash mid-write); cut it off", "path", path, "bytes", size.cut)
	}
	if _, err := f.Seek(0, io.SeekEnd); err != nil {
		f.Close()
		return fmt.Errorf("seeking to the end of %s: %w", path, err)
	}
	j.f, j.size = f, size.kept
	return nil
}

type tail struct{ kept, cut int64 }

// cutTornTail truncates f after its last newline.
func cutTornTail(f *os.File) (tail, error) {
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
	for end > 0 {
		n := min(int64(len(buf)), end)
		if _, err := f.ReadAt(buf[:n], end-n); err != nil {
			return tail{}, err
		}
		if i := bytes.LastIndexByte(buf[:n], '\n'); i >= 0 {
			keep := end - n + int64(i) + 1
			if keep == size {
				return tail{kept: size}, nil
			}
			return tail{kept: keep, cut: size - keep}, f.Truncate(keep)
		}
		end -= n
	}
	return tail{cut: size}, f.Truncate(0)
}

// Append writes e to the journal, fsyncs it, and persists the state. When
// persistence fails it keeps the state in memory and returns the error (once
// per failure streak it is also logged).
func (j *Journal) Append(e step.Event) error {
	j.mu.Lock()
	defer j.mu.Unlock()
	j.state.Epoch = max(j.state.Epoch, e.Epoch)
	j.state.Seq = max(j.state.Seq, e.Seq)
	if e.Boot != 0 && e.Boot >= j.state.GapBoot {
		j.state.Gap, j.state.GapBoot = e.WallAfter.UnixNano()-e.Boot, e.Boot
	}
	if err := j.appendLocked(e); err != nil {
		j.failLocked(err)
		return err
	}
	if j.err != nil {
		j.log.Info("Event journal is persisting again", "dir", j.cfg.Dir)
	}
	j.err = nil
	j.persistent.Store(true)
	return nil
}

func (j *Journal) appendLocked(e step.Event) error {
	if err := j.openLocked(); err != nil {
		return err
	}
	line := appendLine(nil, j.bootID, e)
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
	return j.writeStateLocked()
}

func appendLine(b []byte, bootID string, e step.Event) []byte {
	b = append(b, `{"boot_id":`...)
	id, _ := json.Marshal(bootID)
	b = append(b, id...)
	b = append(b, ',')
	b = e.AppendJSONFields(b)
	return append(b, "}\n"...)
}

func (j *Journal) rotateLocked() error {
	if err := j.f.Close(); err != nil {
		j.f = nil
		return fmt.Errorf("closing the event journal for rotation: %w", err)
	}
	j.f = nil
	from, to := filepath.Join(j.cfg.Dir, EventsFile), filepath.Join(j.cfg.Dir, RotatedFile)
	if err := os.Rename(from, to); err != nil {
		return fmt.Errorf("rotating the event journal: %w", err)
	}
	if err := syncDir(j.cfg.Dir); err != nil {
		return err
	}
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
	tmp, err := os.CreateTemp(j.cfg.Dir, StateFile+".tmp*")
	if err != nil {
		return fmt.Errorf("writing the clock epoch: %w", err)
	}
	defer os.Remove(tmp.Name()) // fails harmlessly after the rename
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
	if err := os.Chmod(tmp.Name(), 0o640); err != nil {
		return fmt.Errorf("writing the clock epoch: %w", err)
	}
	if err := os.Rename(tmp.Name(), path); err != nil {
		return fmt.Errorf("replacing the clock epoch: %w", err)
	}
	return syncDir(j.cfg.Dir)
}

func syncDir(dir string) error {
	d, err := os.Open(dir)
	if err != nil {
		return fmt.Errorf("syncing the state directory: %w", err)
	}
	defer d.Close()
	if err := d.Sync(); err != nil {
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
}

// Run appends the events received until ctx is done or events is closed.
// Failures are logged and reported by Persistent, never returned.
func (j *Journal) Run(ctx context.Context, events <-chan step.Event) error {
	defer j.Close()
	for {
		select {
		case <-ctx.Done():
			// Keep what is already queued.
			for {
				select {
				case e, ok := <-events:
					if !ok {
						return nil
					}
					_ = j.Append(e)
				default:
					return nil
				}
			}
		case e, ok := <-events:
			if !ok {
				return nil
			}
			_ = j.Append(e)
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

// scanLines calls fn for every line of r with its number; it returns whether
// the data ended without a final newline.
func scanLines(r io.Reader, fn func(n int, line []byte, last bool)) error {
	br := bufio.NewReader(r)
	n := 0
	for {
		line, err := br.ReadBytes('\n')
		if len(line) > 0 {
			n++
			_, peekErr := br.Peek(1)
			fn(n, line, errors.Is(peekErr, io.EOF))
		}
		if errors.Is(err, io.EOF) {
			return nil
		}
		if err != nil {
			return err
		}
	}
}
