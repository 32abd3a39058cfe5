package announce

import (
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"reflect"
	"time"

	"github.com/clockwatch/clockwatch/internal/policy"
	"github.com/clockwatch/clockwatch/internal/safefile"
	"github.com/clockwatch/clockwatch/stepdown"
)

// StateFile is the name of the policy's state file in the state directory,
// beside the journal's state.json (which keeps the epoch).
const StateFile = "stepdown.json"

// stateVersion is the format of StateFile.
const stateVersion = 1

// savedState is StateFile: the policy's state in BOOTTIME, valid in the
// boot it names.
type savedState struct {
	Version    int                `json:"version"`
	BootID     string             `json:"boot_id"`
	State      stepdown.State     `json:"state,omitempty"`
	Reason     stepdown.Reason    `json:"reason,omitempty"`
	Conditions []policy.Condition `json:"conditions,omitempty"`
	HoldUntil  int64              `json:"hold_until_boottime_ns,omitempty"`
	Known      []string           `json:"known_sources,omitempty"`
	// Markers are the sources' disruption markers (VMClock's).
	Markers map[string]uint64 `json:"disruption_markers,omitempty"`
}

// Boot names the boot and converts CLOCK_MONOTONIC to CLOCK_BOOTTIME: it
// returns the boot id and BOOTTIME − MONOTONIC now.
type Boot func() (id string, suspended time.Duration, err error)

// maxStateBytes bounds stepdown.json (a few hundred bytes as written).
const maxStateBytes = 1 << 20

// loadState reads the policy's state from path. It returns ok false, and no
// error, when there is none to restore: no file, or one from another boot.
func loadState(path string, boot Boot) (ps policy.Persisted, ok bool, err error) {
	b, err := safefile.ReadFile("stepdown state", path, maxStateBytes)
	if errors.Is(err, os.ErrNotExist) {
		return ps, false, nil
	}
	if err != nil {
		return ps, false, fmt.Errorf("reading the stepdown state: %w", err)
	}
	var s savedState
	if err := json.Unmarshal(b, &s); err != nil {
		return ps, false, fmt.Errorf("stepdown state %s is corrupt (%v): starting without it", path, err)
	}
	if s.Version != stateVersion {
		return ps, false, fmt.Errorf("stepdown state %s has version %d, want %d: starting without it", path, s.Version, stateVersion)
	}
	id, susp, err := boot()
	if err != nil {
		return ps, false, err
	}
	if s.BootID != id {
		return ps, false, nil // a reboot: nothing carries over
	}
	switch s.State {
	case "", stepdown.StateOK, stepdown.StateUnknown:
		s.State = ""
	case stepdown.StateStepdown:
		if s.Reason == "" {
			return ps, false, fmt.Errorf("stepdown state %s: state stepdown without a reason: starting without it", path)
		}
	default:
		return ps, false, fmt.Errorf("stepdown state %s: unknown state %q: starting without it", path, s.State)
	}
	ps = policy.Persisted{State: s.State, Reason: s.Reason, Conditions: s.Conditions, Known: s.Known, Markers: s.Markers}
	if s.State == stepdown.StateStepdown {
		ps.HoldUntil = time.Duration(s.HoldUntil) - susp
	}
	return ps, true, nil
}

// saveState writes the policy's state to path atomically: a temporary file,
// fsync, rename, fsync of the directory, so a crash leaves the old state or
// the new one.
func saveState(path string, ps policy.Persisted, boot Boot) error {
	id, susp, err := boot()
	if err != nil {
		return err
	}
	s := savedState{Version: stateVersion, BootID: id, State: ps.State, Reason: ps.Reason,
		Conditions: ps.Conditions, Known: ps.Known, Markers: ps.Markers}
	if ps.State == stepdown.StateStepdown {
		s.HoldUntil = int64(ps.HoldUntil + susp)
	}
	b, err := json.Marshal(s)
	if err != nil {
		return err
	}
	dir := filepath.Dir(path)
	f, err := os.CreateTemp(dir, "."+filepath.Base(path)+".*")
	if err != nil {
		return fmt.Errorf("writing the stepdown state: %w", err)
	}
	tmp := f.Name()
	_, err = f.Write(append(b, '\n'))
	if err == nil {
		err = f.Sync()
	}
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	if err == nil {
		err = os.Rename(tmp, path)
	}
	if err != nil {
		os.Remove(tmp)
		return fmt.Errorf("writing the stepdown state %s: %w", path, err)
	}
	d, err := os.Open(dir)
	if err != nil {
		return fmt.Errorf("syncing %s: %w", dir, err)
	}
	defer d.Close()
	if err := d.Sync(); err != nil {
		return fmt.Errorf("syncing %s: %w", dir, err)
	}
	return nil
}

// restore carries on the state a process before this one left in this boot.
// A state that cannot be read is logged and ignored: the start then waits
// for evidence like any other.
func (a *Announcer) restore() {
	if a.statePath == "" {
		return
	}
	ps, ok, err := loadState(a.statePath, a.boot)
	if err != nil {
		a.log.Warn("cannot restore the stepdown state", "path", a.statePath, "err", err)
		return
	}
	if !ok {
		return
	}
	a.pol.Restore(ps, a.mono())
	a.saved = ps
	if ps.State == stepdown.StateStepdown {
		a.log.Info("stepdown state restored from before the restart", "reason", ps.Reason,
			"conditions", ps.Conditions, "hold_down_left", max(ps.HoldUntil-a.mono(), 0))
	}
}

// persist writes the policy's state when it changed: the state now, so
// that of inputs persisted out of order the last write is the latest.
func (a *Announcer) persist() {
	a.mu.Lock()
	defer a.mu.Unlock()
	a.persistLocked()
}

// persistLocked writes the policy's state when it changed.
func (a *Announcer) persistLocked() {
	if a.statePath == "" {
		return
	}
	ps := a.pol.Persisted()
	if reflect.DeepEqual(ps, a.saved) {
		return
	}
	if err := saveState(a.statePath, ps, a.boot); err != nil {
		if !a.saveErr {
			a.log.Error("cannot persist the stepdown state: a restart will forget the hold-down", "err", err)
		}
		a.saveErr = true
		return
	}
	a.saved, a.saveErr = ps, false
}
