package vm_test

import (
	"encoding/json"
	"fmt"
	"math"
	"math/rand/v2"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/clockwatch/clockwatch/internal/step"
	"github.com/clockwatch/clockwatch/internal/testtool"
	"github.com/clockwatch/clockwatch/test/vm"
	"github.com/clockwatch/clockwatch/test/vm/guest"
)

// PowerCutsEnv sets how many times TestPowerCutsInVM cuts the power:
// 2 when unset (make test: about 40 s at host load 15, less on a quiet
// machine), 20 in make test-power-cuts (issue 25's twenty; 5–6 min at load 15).
const PowerCutsEnv = "CLOCKWATCH_POWER_CUTS"

func powerCuts(t *testing.T) int {
	t.Helper()
	v := os.Getenv(PowerCutsEnv)
	if v == "" {
		return 2
	}
	n, err := strconv.Atoi(v)
	if err != nil || n < 1 {
		t.Fatalf("%s=%q: want a count of at least 1", PowerCutsEnv, v)
	}
	return n
}

// TestPowerCutsInVM is issue 25's real power cut (PowerCutsEnv says how
// many): clockwatch's state
// directory is an ext4 file system on a virtio disk image; in each boot the
// daemon runs with a subscriber on its stepdown socket while the guest steps
// its clock every 100–300 ms, and qemu is killed with SIGKILL at a random
// moment 0.2–2.5 s into the stepping. The next boot, from the same disk, must
// find a journal that parses (ext4 replays its own journal at mount), every
// step the subscriber was told of in it with its epoch and size, and must
// announce an epoch above every one announced before the cut. A last boot
// only checks.
//
// What SIGKILL of qemu loses is what the guest kernel held (its page cache,
// ext4's uncommitted transactions): qemu's writeback cache hands every write
// the guest sent to the disk to the host kernel, which keeps it. A disk that
// loses its own volatile cache is the journal package's PowerCut model.
func TestPowerCutsInVM(t *testing.T) {
	// Not parallel: see doc.go.
	cuts := powerCuts(t)
	mkfs := testtool.Require(t, "mkfs.ext4")
	disk := filepath.Join(t.TempDir(), "state.img")
	if err := os.WriteFile(disk, nil, 0o600); err != nil {
		t.Fatal(err)
	}
	if err := os.Truncate(disk, 64<<20); err != nil {
		t.Fatal(err)
	}
	if out, err := exec.Command(mkfs, "-q", "-F", disk).CombinedOutput(); err != nil {
		t.Fatalf("mkfs.ext4: %v\n%s", err, out)
	}
	seed := uint64(time.Now().UnixNano())
	t.Logf("seed %d", seed)
	rng := rand.New(rand.NewPCG(seed, seed>>1))
	files := map[string]string{
		clockwatchPath:   vm.BuildGo(t, "github.com/clockwatch/clockwatch/cmd/clockwatch"),
		vm.ClockstepPath: vm.BuildGo(t, "./clockstep"),
		sockwatchPath:    vm.BuildGo(t, "./sockwatch"),
	}
	var before []announced // what was announced in the boot before
	var totalSteps, totalTorn int
	start := time.Now()
	for boot := 0; boot <= cuts; boot++ {
		last := boot == cuts
		script := fmt.Sprintf(`set -e
mkdir -p %[1]s
mount -t ext4 /dev/vda %[1]s
clockwatch events --json 2>/tmp/events.err | sed 's/^{/CW-RESULT {"kind":"clockwatch_event",/'
sed 's/^/CW-EVENTS-WARNING /' /tmp/events.err
clockwatch --web.listen-address=%[2]s >/tmp/clockwatch.log 2>&1 &
sockwatch -out /tmp/stepdown.jsonl &
cw_wait_count /tmp/stepdown.jsonl '"type":"hello"' 1 60 || { cat /tmp/clockwatch.log; exit 1; }
`, journalDir, listen)
		if !last {
			script += `echo CW-STEPPING
while :; do
	if [ $((RANDOM % 2)) = 0 ]; then d=-$((1 + RANDOM % 5))s; else d=+$((1 + RANDOM % 5))s; fi
	clockstep setoffset:$d >/dev/null
	usleep $((100000 + RANDOM % 200000))
done
`
		}
		opts := vm.Options{Files: files, Script: script, Disk: disk, Timeout: 2 * time.Minute}
		if !last {
			opts.Kill = &vm.Kill{After: "CW-STEPPING", Delay: time.Duration(200+rng.IntN(2300)) * time.Millisecond}
		}
		res, err := vm.Run(t, opts)
		if err != nil {
			t.Fatalf("boot %d: %v", boot, err)
		}
		if !last && !res.Killed {
			t.Fatalf("boot %d: the VM was not killed; console:\n%s", boot, res.Console)
		}
		events, err := vm.Decode[step.Event](res, "clockwatch_event")
		if err != nil {
			t.Fatalf("boot %d: the journal does not parse: %v", boot, err)
		}
		torn := 0
		for _, l := range strings.Split(res.Console, "\n") {
			if w, ok := strings.CutPrefix(l, "CW-EVENTS-WARNING "); ok {
				if !strings.Contains(w, "torn last line") {
					t.Errorf("boot %d: clockwatch events: %s", boot, w)
				}
				torn++
			}
		}
		totalTorn += torn
		ann, err := announcements(res)
		if err != nil {
			t.Fatalf("boot %d: %v", boot, err)
		}
		if boot > 0 {
			checkCut(t, boot, before, ann, events)
		}
		for _, a := range ann {
			if a.step {
				totalSteps++
			}
		}
		t.Logf("boot %d: %d events in the journal, %d announcements (%d steps) before the cut, hello epoch %d, killed %v after %v",
			boot, len(events), len(ann), countSteps(ann), helloEpoch(ann), res.Killed, res.Elapsed.Round(time.Millisecond))
		before = ann
	}
	t.Logf("%d power cuts in %v: %d steps announced before a cut, all in the journal after it; %d torn last lines", cuts,
		time.Since(start).Round(time.Second), totalSteps, totalTorn)
}

// announced is a message a subscriber got.
type announced struct {
	typ         string
	epoch       uint64
	step        bool
	stepSeconds float64
}

func announcements(res *vm.Result) ([]announced, error) {
	msgs, err := vm.Decode[guest.StepdownMsg](res, guest.KindStepdownMsg)
	if err != nil {
		return nil, err
	}
	var out []announced
	for _, m := range msgs {
		var d stepdownMessage
		if err := json.Unmarshal(m.Message, &d); err != nil {
			return nil, fmt.Errorf("stepdown message %s: %w", m.Message, err)
		}
		out = append(out, announced{typ: d.Type, epoch: d.Epoch, step: d.Type == "stepdown" && d.Reason == "step", stepSeconds: d.StepSeconds})
	}
	return out, nil
}

func countSteps(ann []announced) int {
	n := 0
	for _, a := range ann {
		if a.step {
			n++
		}
	}
	return n
}

func helloEpoch(ann []announced) uint64 {
	for _, a := range ann {
		if a.typ == "hello" {
			return a.epoch
		}
	}
	return 0
}

// checkCut checks a boot against the one before its power cut: every step
// announced then is in the journal now, with its size, and the first hello
// now has an epoch above every epoch announced then.
func checkCut(t *testing.T, boot int, before, now []announced, journal []step.Event) {
	t.Helper()
	byEpoch := map[uint64]step.Event{}
	for _, e := range journal {
		if e.Type == step.TypeStep {
			byEpoch[e.Epoch] = e
		}
	}
	var top uint64
	for _, a := range before {
		top = max(top, a.epoch)
		if !a.step {
			continue
		}
		e, ok := byEpoch[a.epoch]
		switch {
		case !ok:
			t.Errorf("boot %d: the step announced with epoch %d (%+.6f s) before the cut is not in the journal", boot, a.epoch, a.stepSeconds)
		case math.Abs(e.Step.Seconds()-a.stepSeconds) > 1e-6:
			t.Errorf("boot %d: the step announced with epoch %d was %+.6f s, the journal says %v", boot, a.epoch, a.stepSeconds, e.Step)
		}
	}
	if len(now) == 0 || now[0].typ != "hello" {
		t.Errorf("boot %d: the subscriber's first message is not a hello: %+v", boot, now)
		return
	}
	if now[0].epoch <= top {
		t.Errorf("boot %d: the first hello after the cut has epoch %d, not above the %d announced before it", boot, now[0].epoch, top)
	}
}
