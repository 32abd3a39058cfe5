package journal

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"

	"github.com/clockwatch/clockwatch/internal/safefile"
	"github.com/clockwatch/clockwatch/internal/step"
)

// MaxLineBytes bounds one journal line (an event takes about 330 bytes): a
// longer line is skipped with a warning without being held in memory, so a
// torn or hostile line of any size costs neither the daemon nor `clockwatch
// events` more than this.
const MaxLineBytes = 64 << 10

// typeBoot is the journal line that records the epoch increment of a new
// boot, so that losing state.json cannot undo it. It is not a step.Event:
// Read does not return it.
const typeBoot = "boot"

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
