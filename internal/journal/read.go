package journal

import (
	"bufio"
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/clockwatch/clockwatch/internal/safefile"
	"github.com/clockwatch/clockwatch/internal/step"
)

// Record is one journal entry: an event and the boot it happened in (its
// mono_ns counts from that boot).
type Record struct {
	BootID string
	Event  step.Event
}

// Read returns the journal's records, oldest first, whose wall time (after
// the event) is at or after since (the zero time: all). Lines that cannot be
// read are skipped with a warning, never an error: a torn last line is what
// a crash mid-write leaves. A line longer than MaxLineBytes is skipped without
// being read into memory. A directory without a journal has no records.
func Read(dir string, since time.Time) (recs []Record, warnings []string, err error) {
	warnings, err = readLines(OSFS{}, dir, func(l line) {
		//clockwatch:wallclock-ok since is a wall time from the caller, the records' times are the wall times persisted with them
		if !l.boot && (since.IsZero() || !l.rec.Event.WallAfter.Before(since)) {
			recs = append(recs, l.rec)
		}
	})
	return recs, warnings, err
}

// line is one parsed journal line: an event, or a new boot's epoch increment.
type line struct {
	rec  Record
	boot bool
}

// readLines calls fn with every line of the rotated file then of the
// current one that parses, and returns a warning for every other.
func readLines(fs FS, dir string, fn func(line)) (warnings []string, err error) {
	for _, name := range []string{RotatedFile, EventsFile} {
		path := filepath.Join(dir, name)
		f, err := fs.OpenFile(path, os.O_RDONLY|safefile.Flags, 0)
		f, err = safefile.Checked("event journal", path, f, err)
		if errors.Is(err, os.ErrNotExist) {
			continue
		}
		if errors.Is(err, os.ErrPermission) && !searchable(dir) {
			// Not the file: the directory is closed (a run as root made
			// it 0750). Name it, not a file that may not even exist.
			return warnings, fmt.Errorf("reading the event journal: cannot look for %s or %s in %s: %w", RotatedFile, EventsFile, dir, os.ErrPermission)
		}
		if err != nil {
			return warnings, fmt.Errorf("reading the event journal: %w", err)
		}
		err = scanLines(f, MaxLineBytes, func(n int, b []byte, torn bool, long int64) {
			if long > 0 {
				warnings = append(warnings, fmt.Sprintf("%s line %d: skipped: %d bytes, longer than the %d a journal line may have", path, n, long, MaxLineBytes))
				return
			}
			b = bytes.TrimSpace(b)
			if len(b) == 0 {
				return
			}
			l, perr := parseAny(b)
			switch {
			case perr != nil && torn:
				warnings = append(warnings, fmt.Sprintf("%s line %d: torn last line skipped (an unfinished write, e.g. a crash): %v", path, n, perr))
			case perr != nil:
				warnings = append(warnings, fmt.Sprintf("%s line %d: skipped: %v", path, n, perr))
			default:
				fn(l)
			}
		})
		f.Close()
		if err != nil {
			return warnings, fmt.Errorf("reading %s: %w", path, err)
		}
	}
	return warnings, nil
}

// scanLines calls fn for every line of r with its number, whether it is a
// last line without a newline (torn), and, for a line longer than limit, its
// length instead of its bytes: no more than limit bytes are ever held.
func scanLines(r io.Reader, limit int, fn func(n int, line []byte, torn bool, long int64)) error {
	br := bufio.NewReaderSize(r, limit)
	n := 0
	for {
		b, err := br.ReadSlice('\n')
		if errors.Is(err, bufio.ErrBufferFull) {
			long := int64(len(b))
			for errors.Is(err, bufio.ErrBufferFull) {
				b, err = br.ReadSlice('\n')
				long += int64(len(b))
			}
			n++
			fn(n, nil, false, long)
		} else if len(b) > 0 {
			n++
			fn(n, b, !bytes.HasSuffix(b, []byte("\n")), 0)
		}
		if errors.Is(err, io.EOF) {
			return nil
		}
		if err != nil {
			return err
		}
	}
}

// parseAny parses an event line or a boot line.
func parseAny(b []byte) (line, error) {
	var head struct {
		BootID *string `json:"boot_id"`
		Type   string  `json:"type"`
		Epoch  uint64  `json:"epoch"`
		Seq    uint64  `json:"seq"`
	}
	if err := json.Unmarshal(b, &head); err != nil {
		return line{}, err
	}
	if head.BootID == nil {
		return line{}, errors.New("no boot_id")
	}
	if head.Type != typeBoot {
		r, err := parseLine(b)
		return line{rec: r}, err
	}
	if head.Epoch > step.MaxEpoch || head.Seq > step.MaxEpoch {
		return line{}, fmt.Errorf("epoch %d or seq %d past 2^53: no clock steps that often", head.Epoch, head.Seq)
	}
	return line{boot: true, rec: Record{BootID: *head.BootID, Event: step.Event{Epoch: head.Epoch, Seq: head.Seq}}}, nil
}

func parseLine(b []byte) (Record, error) {
	var head struct {
		BootID *string `json:"boot_id"`
	}
	if err := json.Unmarshal(b, &head); err != nil {
		return Record{}, err
	}
	if head.BootID == nil {
		return Record{}, errors.New("no boot_id")
	}
	var e step.Event
	if err := json.Unmarshal(b, &e); err != nil {
		return Record{}, err
	}
	if err := e.Check(); err != nil {
		return Record{}, err
	}
	return Record{BootID: *head.BootID, Event: e}, nil
}

// readFile reads a whole file of at most limit bytes (more is an error: no
// run writes so much) through fs.
func readFile(fs FS, path string, limit int64) ([]byte, error) {
	f, err := fs.OpenFile(path, os.O_RDONLY|safefile.Flags, 0)
	f, err = safefile.Checked("state file", path, f, err)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	return safefile.ReadAll(safefile.Spec{What: "state file", Limit: limit}, path, f)
}

// Print writes records for `clockwatch events`: one JSON object per line
// (the journal's own lines) with asJSON, else one human line each.
func Print(w io.Writer, recs []Record, asJSON bool) error {
	var b []byte
	for _, r := range recs {
		b = b[:0]
		if asJSON {
			b = appendLine(b, r.BootID, r.Event)
		} else {
			b = appendHuman(b, r.Event)
		}
		if _, err := w.Write(b); err != nil {
			return fmt.Errorf("printing events: %w", err)
		}
	}
	return nil
}

func appendHuman(b []byte, e step.Event) []byte {
	b = e.WallAfter.UTC().AppendFormat(b, "2006-01-02T15:04:05.000000Z07:00")
	b = append(b, "  "...)
	switch e.Type {
	case step.TypeStep:
		dir := "forward"
		if e.Step < 0 {
			dir = "backward"
		}
		kind := "step"
		if e.Leap {
			kind = "leap second"
		}
		b = fmt.Appendf(b, "%s %s by %s (%+.6f s)", kind, dir, e.Step.Abs(), e.StepSeconds())
	case step.TypeWake:
		b = fmt.Appendf(b, "resume after %s suspended", e.Suspended)
	default:
		b = fmt.Appendf(b, "clock set without a measurable step (%+.6f s)", e.StepSeconds())
	}
	b = fmt.Appendf(b, "  seen=%s delay=%s epoch=%d seq=%d\n", e.Seen, e.Delay, e.Epoch, e.Seq)
	return b
}

// PrintWarnings writes the warnings of Read, one a line, prefixed.
func PrintWarnings(w io.Writer, warnings []string) {
	for _, s := range warnings {
		fmt.Fprintln(w, "warning: "+strings.TrimSpace(s))
	}
}

// searchable says whether this process may look up names in dir: stat of a
// name needs only that, so a stat refused for permission means it may not.
func searchable(dir string) bool {
	_, err := os.Stat(filepath.Join(dir, EventsFile))
	return !errors.Is(err, os.ErrPermission)
}
