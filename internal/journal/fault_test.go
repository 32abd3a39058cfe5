package journal

import (
	"fmt"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/clockwatch/clockwatch/internal/probe"
	"github.com/clockwatch/clockwatch/internal/step"
)

// The crash suite: a scenario of daemon runs (restarts, a reboot, steps at
// run time and while clockwatch was down) is played once to count its durable
// operations, then once per operation with a crash there (and, for writes,
// once more with the write torn), the runs after the crash going on with a
// healthy disk. At every crash point the epochs announced to clients must
// never go back, and a step must never be announced with an epoch already
// announced before it.

// noSyncFS is the real file system without fsync: a crash here is the
// process dying (FaultFS stops every operation from its crash point on), so
// what the files hold is all that matters, and the suite runs in
// milliseconds. CLOCKWATCH_FAULTS=1 (make test-faults) keeps the real fsync.
type noSyncFS struct{ OSFS }

func (noSyncFS) OpenFile(name string, flag int, perm os.FileMode) (File, error) {
	f, err := os.OpenFile(name, flag, perm)
	if err != nil {
		return nil, err
	}
	return noSyncFile{f}, nil
}

func (noSyncFS) CreateTemp(dir, pattern string) (File, error) {
	f, err := os.CreateTemp(dir, pattern)
	if err != nil {
		return nil, err
	}
	return noSyncFile{f}, nil
}

func (noSyncFS) SyncDir(string) error { return nil }

type noSyncFile struct{ *os.File }

func (noSyncFile) Sync() error { return nil }

func baseFS() FS {
	if os.Getenv("CLOCKWATCH_FAULTS") != "" {
		return OSFS{}
	}
	return noSyncFS{}
}

// world is the true clock of the scenario: BOOTTIME of each boot, and the
// REALTIME−BOOTTIME gap that steps change.
type world struct {
	boot string
	t    int64 // BOOTTIME, ns
	gap  int64
}

func (w *world) sample() probe.Sample {
	w.t += int64(time.Second)
	return probe.Sample{Mono: w.t, Boot: w.t, Real: w.t + w.gap, Window: 1000}
}

// action is one thing that happens in the scenario.
type action struct {
	stepBy  time.Duration // the clock steps by this much (0: none)
	reboot  string        // the machine reboots with this boot id
	restart bool          // clockwatch stops and starts again
	samples int           // clockwatch takes this many samples
	lose    bool          // state.json is lost while clockwatch is down
}

// scenario: two runs in boot a with a step in each and one while down, a
// reboot, state.json lost before boot b has an event, another reboot, a step
// in boot c, state.json lost again, and a last quiet run.
var scenario = []action{
	{samples: 3}, {stepBy: 5 * time.Second}, {samples: 3}, {restart: true},
	{stepBy: -3 * time.Second}, {samples: 2}, {stepBy: time.Hour}, {samples: 2},
	{reboot: "b"}, {samples: 2}, {lose: true}, {samples: 2},
	{reboot: "c"}, {samples: 2}, {stepBy: -2 * time.Second}, {samples: 2}, {restart: true},
	{lose: true}, {samples: 2}, {restart: true},
	{samples: 2},
}

// announcement is an epoch the daemon told clients: in a hello (Open's
// state) or with a step.
type announcement struct {
	epoch uint64
	step  bool
	where string
}

// runScenario plays the scenario with fs for the first run that crashes and
// a healthy fs afterwards; it returns what was announced.
func runScenario(t *testing.T, dir string, fault *FaultFS) []announcement {
	t.Helper()
	w := &world{boot: "a", gap: 1_790_000_000e9}
	var out []announcement
	var fs FS = fault
	var j *Journal
	var det *step.Detector
	crashed := false
	first := true
	rebooted := false
	start := func() {
		if fault.Crashed() {
			fs, crashed = baseFS(), true
		}
		j = Open(Config{Dir: dir, MaxBytes: 1000}, Options{FS: fs, BootID: bootID(w.boot)})
		det = step.NewDetector(step.DefaultConfig(), j.State())
		first = true
		if fault.Crashed() && !crashed {
			j, det = nil, nil // died in Open: nothing announced
			return
		}
		// The first hello of a new boot announces its increment: a new
		// era, like a step.
		out = append(out, announcement{epoch: j.State().Epoch, step: rebooted, where: "hello after Open in boot " + w.boot})
		rebooted = false
	}
	stop := func() {
		if j != nil {
			if last, ok := det.Last(); ok {
				j.SaveBaseline(last, det.State())
			}
			j.Close()
		}
		j, det = nil, nil
	}
	start()
	for i, a := range scenario {
		if j != nil && fault.Crashed() && !crashed {
			// The process died at the crash point: the next action finds
			// it gone and systemd starts it again.
			j, det = nil, nil
		}
		switch {
		case a.stepBy != 0:
			w.gap += int64(a.stepBy)
		case a.reboot != "":
			stop()
			w.boot, w.t, rebooted = a.reboot, 0, true
			start()
		case a.restart:
			stop()
			w.t += int64(10 * time.Second)
			start()
		case a.lose:
			stop()
			os.Remove(dir + "/" + StateFile)
			start()
		}
		for range a.samples {
			smp := w.sample()
			if det == nil {
				start()
				if det == nil {
					continue
				}
			}
			evs := append([]step.Event(nil), det.Observe(smp)...)
			for _, e := range evs {
				// The daemon forwards an event to the stepdown server as
				// soon as its line is durable (AppendThen), before
				// state.json; a process that crashed before announces
				// nothing.
				_ = j.AppendThen(e, func(e step.Event) {
					if e.Type == step.TypeStep && !(fault.Crashed() && !crashed) {
						out = append(out, announcement{epoch: e.Epoch, step: true, where: fmt.Sprintf("action %d: step %s seen=%s", i, e.Step, e.Seen)})
					}
				})
				if fault.Crashed() && !crashed {
					j, det = nil, nil
					break
				}
			}
			if j != nil && first {
				j.SaveBaseline(smp, det.State())
				first = false
			}
		}
	}
	stop()
	return out
}

// checkMonotonic reports an epoch that went back, or a step announced with
// an epoch already announced.
func checkMonotonic(ann []announcement) error {
	var top uint64
	for i, a := range ann {
		switch {
		case a.epoch < top:
			return fmt.Errorf("announcement %d (%s): epoch %d after %d was announced", i, a.where, a.epoch, top)
		case a.step && i > 0 && a.epoch == top:
			return fmt.Errorf("announcement %d (%s): a step with epoch %d, already announced", i, a.where, a.epoch)
		}
		top = max(top, a.epoch)
	}
	return nil
}

func TestCrashAtEveryDurableWrite(t *testing.T) {
	t.Parallel()
	clean := &FaultFS{FS: baseFS()}
	ann := runScenario(t, t.TempDir(), clean)
	if err := checkMonotonic(ann); err != nil {
		t.Fatalf("without a crash: %v", err)
	}
	steps := 0
	for _, a := range ann {
		if a.step {
			steps++
		}
	}
	// Four steps (one seen at a restart) and two reboots.
	if last := ann[len(ann)-1].epoch; steps != 6 || last != 6 {
		t.Fatalf("without a crash: %d steps and reboots announced, last epoch %d; want 6 and 6:\n%+v", steps, last, ann)
	}
	ops := clean.Ops()
	t.Logf("scenario: %d durable operations, %d announcements", ops, len(ann))
	points := 0
	for k := 1; k <= ops; k++ {
		for _, torn := range []bool{false, true} {
			if torn && !strings.Contains(clean.Log()[k-1], " write ") {
				continue
			}
			points++
			fault := &FaultFS{FS: baseFS(), CrashAt: k, Torn: torn}
			ann := runScenario(t, t.TempDir(), fault)
			if err := checkMonotonic(ann); err != nil {
				t.Errorf("crash at operation %s (torn %v): %v\noperations: %s", clean.Log()[k-1], torn, err,
					strings.Join(fault.Log(), ", "))
			}
		}
	}
	t.Logf("%d crash points, epoch monotonic at every one", points)
}
