package journal

import (
	"encoding/json"
	"fmt"
	"go/ast"
	"go/parser"
	"go/token"
	"maps"
	"math"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/clockwatch/clockwatch/internal/kernel"
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

// scratchDir is where a crash suite plays its scenarios: memory (/dev/shm)
// when there is one, as the model keeps its own record of what is durable and
// a disk's metadata writes made the suite twenty times slower here; the disk
// when CLOCKWATCH_FAULTS=1 asks for the real fsync.
func scratchDir(t *testing.T) string {
	t.Helper()
	if os.Getenv("CLOCKWATCH_FAULTS") == "" {
		if d, err := os.MkdirTemp("/dev/shm", "clockwatch-journal-"); err == nil {
			t.Cleanup(func() { os.RemoveAll(d) })
			return d
		}
	}
	return t.TempDir()
}

func baseFS() FS {
	if os.Getenv("CLOCKWATCH_FAULTS") != "" {
		return OSFS{}
	}
	return noSyncFS{}
}

// fsFor is the file system a crash point plays on: a power cut's outcome is
// the model's (FaultFS keeps its own record of what each fsync made durable),
// so it needs no real fsync and runs in every mode. It ran only without
// CLOCKWATCH_FAULTS=1, so under make test-faults removing the journal's
// directory syncs passed every crash test (issue 32, item 6).
func fsFor(m Model) FS {
	if m == PowerCut {
		return noSyncFS{}
	}
	return baseFS()
}

// world is the true clock of the scenario: BOOTTIME of each boot, and the
// REALTIME−BOOTTIME gap that steps change.
type world struct {
	boot string
	t    int64 // BOOTTIME, ns
	gap  int64
}

func (w *world) sample() kernel.Sample {
	w.t += int64(time.Second)
	return kernel.Sample{Mono: w.t, Boot: w.t, Real: w.t + w.gap, Window: 1000}
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
// state) or with a step (seq is the step's).
type announcement struct {
	epoch uint64
	step  bool
	seq   uint64
	where string
}

// outcome is what a scenario run announced, and what it found wrong on the
// disk right after its crash (nil when it did not crash, or all was well).
type outcome struct {
	ann      []announcement
	afterCut error
}

// runScenario plays the scenario with fault for the first run that crashes
// and a healthy fs afterwards. Under a PowerCut the machine reboots at the
// crash point: the next start is in a new boot.
func runScenario(t *testing.T, dir string, fault *FaultFS) outcome {
	t.Helper()
	w := &world{boot: "a", gap: 1_790_000_000e9}
	var out outcome
	var fs FS = fault
	var j *Journal
	var det *step.Detector
	crashed := false
	first := true
	rebooted := false
	// promised is state.json as it was after the last call that returned
	// with the journal persisting: what a crash must not take back.
	var promised *persisted
	promise := func() {
		if j == nil || fault.Crashed() || !j.Persistent() {
			return
		}
		b, err := os.ReadFile(filepath.Join(dir, StateFile))
		var p persisted
		if err == nil && json.Unmarshal(b, &p) == nil {
			promised = &p
		}
	}
	// crashedNow notices the crash once: the disk is checked as the crash
	// left it, and a power cut reboots.
	crashedNow := func() bool {
		if crashed || !fault.Crashed() {
			return false
		}
		fs, crashed = baseFS(), true
		out.afterCut = checkAfterCrash(dir, out.ann, promised, fault.Torn)
		if fault.Model == PowerCut {
			w.boot, w.t, rebooted = w.boot+"'", 0, true
		}
		return true
	}
	start := func() {
		crashedNow()
		j = Open(Config{Dir: dir, MaxBytes: 1000}, Options{FS: fs, BootID: bootID(w.boot)})
		det = step.NewDetector(step.DefaultConfig(), j.State())
		first = true
		if fault.Crashed() && !crashed {
			j, det = nil, nil // died in Open: nothing announced
			return
		}
		// The first hello of a new boot announces its increment: a new
		// era, like a step.
		out.ann = append(out.ann, announcement{epoch: j.State().Epoch, step: rebooted, where: "hello after Open in boot " + w.boot})
		rebooted = false
		promise()
	}
	stop := func() {
		if j != nil {
			if last, ok := det.Last(); ok {
				j.SaveBaseline(last, det.State())
				promise()
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
			promised = nil
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
				// The daemon forwards an event to the announcer as
				// soon as its line is durable (AppendThen), before
				// state.json; a process that crashed before announces
				// nothing.
				_ = j.AppendThen(e, func(e step.Event) {
					if e.Type == step.TypeStep && !(fault.Crashed() && !crashed) {
						out.ann = append(out.ann, announcement{epoch: e.Epoch, step: true, seq: e.Seq,
							where: fmt.Sprintf("action %d: step %s seen=%s", i, e.Step, e.Seen)})
					}
				})
				if fault.Crashed() && !crashed {
					j, det = nil, nil
					break
				}
				promise()
			}
			if j != nil && first {
				j.SaveBaseline(smp, det.State())
				promise()
				first = false
			}
		}
	}
	stop()
	crashedNow()
	return out
}

// checkAfterCrash checks the state directory as a crash left it, before
// anything repairs it: every step announced is in the journal (older ones
// may have gone with a rotation, never the last), the journal parses (a torn
// last line only when the crash tore a write), and state.json is there,
// parses, and is the last state promised or a newer one.
func checkAfterCrash(dir string, ann []announcement, promised *persisted, torn bool) error {
	recs, warnings, err := Read(dir, time.Time{})
	if err != nil {
		return fmt.Errorf("reading the journal after the crash: %w", err)
	}
	for _, w := range warnings {
		if !torn || !strings.Contains(w, "torn last line") {
			return fmt.Errorf("journal after the crash: %s", w)
		}
	}
	inJournal := map[[2]uint64]bool{}
	minSeq := uint64(math.MaxUint64)
	for _, r := range recs {
		inJournal[[2]uint64{r.Event.Epoch, r.Event.Seq}] = true
		minSeq = min(minSeq, r.Event.Seq)
	}
	lastStep := -1
	for i, a := range ann {
		if a.step && a.seq > 0 {
			lastStep = i
		}
	}
	for i, a := range ann {
		if !a.step || a.seq == 0 || (a.seq < minSeq && i != lastStep) {
			continue
		}
		if !inJournal[[2]uint64{a.epoch, a.seq}] {
			return fmt.Errorf("announced step (epoch %d, seq %d: %s) is not in the journal after the crash (%d records)", a.epoch, a.seq, a.where, len(recs))
		}
	}
	if promised == nil {
		return nil
	}
	b, err := os.ReadFile(filepath.Join(dir, StateFile))
	if err != nil {
		return fmt.Errorf("%s after the crash: %w (state with epoch %d was persisted)", StateFile, err, promised.Epoch)
	}
	var got persisted
	if err := json.Unmarshal(b, &got); err != nil {
		return fmt.Errorf("%s after the crash does not parse (%v): %q", StateFile, err, b)
	}
	if got.Epoch < promised.Epoch || got.Seq < promised.Seq || (got.BootID == promised.BootID && got.GapBoot < promised.GapBoot) {
		return fmt.Errorf("%s after the crash is older than what was persisted: got %+v, persisted %+v", StateFile, got, *promised)
	}
	return nil
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

// crashPoint is one way the scenario can crash.
type crashPoint struct {
	at    int
	model Model
	torn  bool
}

// crashPoints enumerates, for the log of a clean run, every operation under
// both models, each write torn once more under ProcessCrash, and under
// PowerCut each operation once more with half of the unsynced data kept.
func crashPoints(log []string) []crashPoint {
	var pts []crashPoint
	for k := 1; k <= len(log); k++ {
		pts = append(pts, crashPoint{k, ProcessCrash, false})
		if strings.Contains(log[k-1], " write ") {
			pts = append(pts, crashPoint{k, ProcessCrash, true})
		}
		pts = append(pts, crashPoint{k, PowerCut, false}, crashPoint{k, PowerCut, true})
	}
	return pts
}

// runCrashPoints plays the scenario at the crash points pts with the syncs
// of skip (a sync site, "" for none) doing nothing; it returns each failure,
// or only the first with firstOnly.
func runCrashPoints(t *testing.T, log []string, pts []crashPoint, skip string, firstOnly bool) []string {
	t.Helper()
	var fails []string
	root := scratchDir(t)
	for i, p := range pts {
		fault := &FaultFS{FS: fsFor(p.model), CrashAt: p.at, Torn: p.torn, Model: p.model, Skip: skip}
		dir := filepath.Join(root, fmt.Sprint(i), "state")
		o := runScenario(t, dir, fault)
		err := checkMonotonic(o.ann)
		if err == nil {
			err = o.afterCut
		}
		if err != nil {
			fails = append(fails, fmt.Sprintf("%s at operation %s (torn %v): %v\noperations: %s", p.model, log[p.at-1], p.torn, err,
				strings.Join(fault.Log(), ", ")))
			if firstOnly {
				break
			}
		}
		os.RemoveAll(filepath.Dir(dir))
	}
	return fails
}

// cleanRun plays the scenario without a crash and checks what it announced.
func cleanRun(t *testing.T) *FaultFS {
	t.Helper()
	clean := &FaultFS{FS: baseFS(), Model: PowerCut}
	o := runScenario(t, filepath.Join(scratchDir(t), "state"), clean)
	if err := checkMonotonic(o.ann); err != nil {
		t.Fatalf("without a crash: %v", err)
	}
	steps := 0
	for _, a := range o.ann {
		if a.step {
			steps++
		}
	}
	// Four steps (one seen at a restart) and two reboots.
	if last := o.ann[len(o.ann)-1].epoch; steps != 6 || last != 6 {
		t.Fatalf("without a crash: %d steps and reboots announced, last epoch %d; want 6 and 6:\n%+v", steps, last, o.ann)
	}
	return clean
}

func TestCrashAtEveryDurableWrite(t *testing.T) {
	t.Parallel()
	clean := cleanRun(t)
	log := clean.Log()
	// Every point in every mode: with CLOCKWATCH_FAULTS=1 the process
	// crashes run with the real fsync, the power cuts on the model (fsFor).
	pts := crashPoints(log)
	for _, f := range runCrashPoints(t, log, pts, "", false) {
		t.Error(f)
	}
	t.Logf("scenario: %d durable operations, %d crash points (process crash, torn writes, power cuts with and without half the unsynced data), epoch monotonic, announced steps journaled and state intact at every one",
		len(log), len(pts))
}

// TestEverySyncIsNeeded is the power-cut suite's mutation check: each fsync
// and directory fsync of this package in turn does nothing, and the crash
// suite must then fail. Every Sync and SyncDir call in the package's source
// must be reached by the scenario, so that a sync added later is checked
// too (or found superfluous).
func TestEverySyncIsNeeded(t *testing.T) {
	t.Parallel()
	clean := cleanRun(t)
	log := clean.Log()
	reached := clean.SyncSites()
	byLine := map[string]string{}
	for site := range reached {
		byLine[strings.Fields(site)[0]] = site
	}
	for _, src := range syncCallsInSource(t) {
		if _, ok := byLine[src]; !ok {
			t.Errorf("%s: a sync the crash scenario never reaches, so nothing shows it is needed (sites reached: %v)", src, reached)
		}
	}
	// A missing sync shows only when the power is cut.
	var cuts []crashPoint
	for _, p := range crashPoints(log) {
		if p.model == PowerCut {
			cuts = append(cuts, p)
		}
	}
	sites := slices.Sorted(maps.Keys(reached))
	for _, site := range sites {
		fails := runCrashPoints(t, log, cuts, site, true)
		if len(fails) == 0 {
			t.Errorf("without the sync at %s (called %d times) the power-cut suite still passes: it is not needed, or the suite cannot see what it protects", site, reached[site])
			continue
		}
		first, _, _ := strings.Cut(fails[0], "\n")
		t.Logf("without the sync at %s: caught, first by %s", site, first)
	}
	t.Logf("%d syncs, each caught by the power-cut suite", len(sites))
}

// syncCallsInSource returns "file.go:line" of every call of a method named
// Sync or SyncDir in the package's non-test files, except the file system
// implementations themselves.
func syncCallsInSource(t *testing.T) []string {
	t.Helper()
	fset := token.NewFileSet()
	files, err := filepath.Glob("*.go")
	if err != nil {
		t.Fatal(err)
	}
	var out []string
	for _, name := range files {
		if strings.HasSuffix(name, "_test.go") || name == "fs.go" {
			continue
		}
		f, err := parser.ParseFile(fset, name, nil, 0)
		if err != nil {
			t.Fatal(err)
		}
		ast.Inspect(f, func(n ast.Node) bool {
			if call, ok := n.(*ast.CallExpr); ok {
				if sel, ok := call.Fun.(*ast.SelectorExpr); ok && (sel.Sel.Name == "Sync" || sel.Sel.Name == "SyncDir") {
					p := fset.Position(call.Pos())
					out = append(out, fmt.Sprintf("%s:%d", filepath.Base(p.Filename), p.Line))
				}
			}
			return true
		})
	}
	if len(out) == 0 {
		t.Fatal("no Sync or SyncDir call found in the package's source")
	}
	return out
}
