package stepvm

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"testing"
	"time"

	"github.com/clockwatch/clockwatch/internal/journal"
	"github.com/clockwatch/clockwatch/internal/step"
	"github.com/clockwatch/clockwatch/internal/testtool"
	"github.com/clockwatch/clockwatch/test/vm"
)

const (
	listen     = "127.0.0.1:9847"
	metricsURL = "http://" + listen + "/metrics"
	journalDir = "/var/lib/clockwatch"
	stepSize   = 31 * time.Second
	ttl        = 30 * time.Second
)

// forwardStep mirrors cmd/stepguest's Result.
type forwardStep struct {
	Key                string `json:"key"`
	AGot               bool   `json:"a_got"`
	BRefused           bool   `json:"b_refused"`
	PTTLBeforeMS       int64  `json:"pttl_before_ms"`
	KeyAfterStep       string `json:"key_after_step"`
	BGot               bool   `json:"b_got"`
	OwnerAfter         string `json:"owner_after"`
	ALockMonoNS        int64  `json:"a_lock_mono_ns"`
	StepReturnedMonoNS int64  `json:"step_returned_mono_ns"`
	BLockMonoNS        int64  `json:"b_lock_mono_ns"`
	AStillBelievesMS   int64  `json:"a_still_believes_ms"`
}

// TestForwardStepExpiresLockInVM: Debian's redis-server in the guest, a
// lock with PX 30000 taken and held, the guest's clock stepped +31 s: the
// key is gone at once, a second worker takes the lock while the first,
// counting on the monotonic clock, believes it has about 29 s left; the
// guest's clockwatch records a +31 s step.
func TestForwardStepExpiresLockInVM(t *testing.T) {
	redisServer := testtool.Require(t, "redis-server")
	script := fmt.Sprintf(`set -e
trap '[ $? = 0 ] || { echo "redis log:"; cat /tmp/redis.log; echo "clockwatch log:"; tail -n 40 /tmp/clockwatch.log; }' EXIT
clockwatch --web.listen-address=%[1]s >/tmp/clockwatch.log 2>&1 &
cw_wait_metric %[2]s '^%[3]s 1'
/usr/bin/redis-server --port 6379 --bind 127.0.0.1 --save '' --appendonly no >/tmp/redis.log 2>&1 &
stepguest -step %[4]s
cw_wait_count %[5]s/%[6]s '"type":"step"' 1
clockwatch events --json | sed 's/^{/CW-RESULT {"kind":"clockwatch_event",/'
`, listen, metricsURL, step.MetricWatcherUp, stepSize, journalDir, journal.EventsFile)
	dir := t.TempDir()
	stepguest := vm.NewBuilder(dir).Build(t, "../cmd/stepguest") // skips (fails under CI) without qemu
	res, err := vm.Run(t, vm.Options{
		Files: map[string]string{
			"/bin/clockwatch": buildInMainModule(t, dir, "./cmd/clockwatch"),
			vm.ClockstepPath:  buildInMainModule(t, dir, "./test/vm/clockstep"),
			"/bin/stepguest":  stepguest,
		},
		Dynamic:   map[string]string{"/usr/bin/redis-server": redisServer},
		Script:    script,
		CPUs:      2,
		MemoryMiB: 512,
	})
	if err != nil {
		t.Fatal(err)
	}
	t.Logf("boot to /init %v, script %v, whole run %v", res.Booted, res.ScriptTime, res.Elapsed)
	if res.ExitCode != 0 {
		t.Fatalf("guest script exited %d; console:\n%s", res.ExitCode, res.Console)
	}
	runs, err := vm.Decode[forwardStep](res, "redis_forward_step")
	if err != nil || len(runs) != 1 {
		t.Fatalf("redis_forward_step results: %v, %v; console:\n%s", runs, err, res.Console)
	}
	r := runs[0]
	if !r.AGot || !r.BRefused {
		t.Errorf("before the step: A got the lock %v, B refused %v; want the lock to work", r.AGot, r.BRefused)
	}
	if r.PTTLBeforeMS <= 0 || r.PTTLBeforeMS > ttl.Milliseconds() {
		t.Errorf("PTTL before the step %d ms, want within the lock's %s", r.PTTLBeforeMS, ttl)
	}
	if r.KeyAfterStep != "" {
		t.Errorf("right after the +%s step the key holds %q, want it expired", stepSize, r.KeyAfterStep)
	}
	if !r.BGot || r.OwnerAfter != "worker-b" {
		t.Errorf("after the step: B got the lock %v, the key holds %q; want B's", r.BGot, r.OwnerAfter)
	}
	// A judged its lock on the monotonic clock: it still believed in most
	// of it when B took it.
	if r.AStillBelievesMS < (ttl - 10*time.Second).Milliseconds() {
		t.Errorf("A believed %d ms were left when B got the lock, want most of %s", r.AStillBelievesMS, ttl)
	}
	stepToB := time.Duration(r.BLockMonoNS - r.StepReturnedMonoNS)
	steps, err := vm.Decode[step.Event](res, "clockwatch_event")
	if err != nil {
		t.Fatal(err)
	}
	var seen []step.Event
	for _, e := range steps {
		if e.Type == step.TypeStep {
			seen = append(seen, e)
		}
	}
	if len(seen) != 1 || (seen[0].Step-stepSize).Abs() > 50*time.Millisecond {
		t.Errorf("clockwatch in the guest recorded %v, want one step of +%s", seen, stepSize)
	}
	t.Logf("PTTL before the step %d ms; step → B's lock %s; A still believed %d ms were left", r.PTTLBeforeMS, stepToB, r.AStillBelievesMS)
	for _, e := range seen {
		t.Logf("clockwatch on the master's node: a step of %+v seen by %s, %s after it", e.Step, e.Seen, e.Delay)
	}
}

// buildInMainModule builds a static binary of a package of clockwatch's main
// module (its daemon, test/vm's clockstep) in the repository's workspace:
// this module's go.sum has only what this module imports.
func buildInMainModule(t *testing.T, dir, pkg string) string {
	t.Helper()
	root, err := filepath.Abs("../../..")
	if err != nil {
		t.Fatal(err)
	}
	out := filepath.Join(dir, filepath.Base(pkg))
	cmd := exec.Command("go", "build", "-trimpath", "-ldflags=-s -w", "-o", out, pkg)
	cmd.Dir = root
	cmd.Env = append(os.Environ(), "CGO_ENABLED=0", "GOOS=linux", "GOARCH=amd64", "GOFLAGS=", "GOWORK="+filepath.Join(root, "go.work"))
	if b, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("building %s in %s for the guest: %v\n%s", pkg, root, err, b)
	}
	return out
}
