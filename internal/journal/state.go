package journal

import (
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"os"
	"path/filepath"
	"strings"

	"github.com/clockwatch/clockwatch/internal/kernel"
	"github.com/clockwatch/clockwatch/internal/step"
)

// maxStateBytes bounds state.json (about 120 bytes when written by us).
const maxStateBytes = 64 << 10

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
