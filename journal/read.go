package journal

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/clockwatch/clockwatch/step"
)

var zeroTime time.Time

// Record is one journal entry: an event and the boot it happened in (its
// mono_ns counts from that boot).
type Record struct {
	BootID string
	Event  step.Event
}

// MarshalJSON writes the record as the journal line (without the newline).
func (r Record) MarshalJSON() ([]byte, error) {
	return bytes.TrimSuffix(appendLine(nil, r.BootID, r.Event), []byte("\n")), nil
}

// Read returns the journal's records, oldest first, whose wall time (after
// the event) is at or after since (the zero time: all). Lines that cannot be
// read are skipped with a warning, never an error: a torn last line is what
// a crash mid-write leaves. A directory without a journal has no records.
func Read(dir string, since time.Time) (recs []Record, warnings []string, err error) {
	for _, name := range []string{RotatedFile, EventsFile} {
		path := filepath.Join(dir, name)
		f, err := os.Open(path)
		if errors.Is(err, os.ErrNotExist) {
			continue
		}
		if err != nil {
			return recs, warnings, fmt.Errorf("reading the event journal: %w", err)
		}
		err = scanLines(f, func(n int, line []byte, last bool) {
			torn := last && !bytes.HasSuffix(line, []byte("\n"))
			line = bytes.TrimSpace(line)
			if len(line) == 0 {
				return
			}
			r, perr := parseLine(line)
			switch {
			case perr != nil && torn:
				warnings = append(warnings, fmt.Sprintf("%s line %d: torn last line skipped (an unfinished write, e.g. a crash): %v", path, n, perr))
			case perr != nil:
				warnings = append(warnings, fmt.Sprintf("%s line %d: skipped: %v", path, n, perr))
			case since.IsZero() || !r.Event.WallAfter.Before(since):
				recs = append(recs, r)
			}
		})
		f.Close()
		if err != nil {
			return recs, warnings, fmt.Errorf("reading %s: %w", path, err)
		}
	}
	return recs, warnings, nil
}

func parseLine(line []byte) (Record, error) {
	var head struct {
		BootID *string `json:"boot_id"`
	}
	if err := json.Unmarshal(line, &head); err != nil {
		return Record{}, err
	}
	if head.BootID == nil {
		return Record{}, errors.New("no boot_id")
	}
	var e step.Event
	if err := json.Unmarshal(line, &e); err != nil {
		return Record{}, err
	}
	return Record{BootID: *head.BootID, Event: e}, nil
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
	case step.TypeResume:
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
