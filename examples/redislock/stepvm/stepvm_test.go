package stepvm

import (
	"context"
	"database/sql"
	"fmt"
	"log/slog"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"sync"
	"testing"
	"time"

	_ "github.com/jackc/pgx/v5/stdlib" // the "pgx" database/sql driver
	"github.com/redis/go-redis/v9"

	"github.com/clockwatch/clockwatch/examples/redislock"
	"github.com/clockwatch/clockwatch/examples/redislock/replay"
	"github.com/clockwatch/clockwatch/internal/journal"
	"github.com/clockwatch/clockwatch/internal/step"
	"github.com/clockwatch/clockwatch/internal/testtool"
	"github.com/clockwatch/clockwatch/stepdown"
	"github.com/clockwatch/clockwatch/test/vm"
	"github.com/clockwatch/clockwatch/test/vm/guest"
)

const (
	listen     = "127.0.0.1:9847"
	metricsURL = "http://" + listen + "/metrics"
	journalDir = "/var/lib/clockwatch"
	stepSize   = 31 * time.Second
	ttl        = 30 * time.Second

	// The job of each variant: orders paid one every payEvery; the
	// workers without the lock try again every retryEvery; the step comes
	// once the first worker has paid paidBeforeStep.
	orders         = 40
	payEvery       = 100 * time.Millisecond
	retryEvery     = 100 * time.Millisecond
	paidBeforeStep = 5
	// peersInterval is both clockwatch agents' peers.interval (peersConfig).
	peersInterval = time.Second
	// guestHoldDown is the guest's stepdown.hold_down: after a step, its
	// clockwatch says stepdown this long, then ok with the new epoch.
	guestHoldDown = 2 * time.Second
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

// variant is one defence of the forward-step replay.
type variant struct {
	name, title string
	// watch: every worker follows the Redis master's node's clock
	// (redislock.PeerWatch, through the host's clockwatch).
	watch bool
	// fence: the data side's guard (stepdown.Fence, epochs from a
	// PostgreSQL sequence).
	fence bool
}

var variants = []variant{
	{name: "a", title: "no guard, no watch"},
	{name: "b", title: "the peer watch only", watch: true},
	{name: "c", title: "the guard only (PostgreSQL sequence)", fence: true},
}

// outcome is what one variant did.
type outcome struct {
	variant
	tally redislock.Tally
	// stepAt is when the guest's clock stepped, by the host's clock: the
	// arrival of clockstep's result line on the console, just after the
	// call returned in the guest.
	stepAt time.Time
	// gateAt is when the host let the guest step (it polls every 100 ms):
	// before the step.
	gateAt time.Time
	// aFirst is the first worker's run under the lock taken before the
	// step; bLock when the second got the lock after it.
	aFirst redislock.Run
	bLock  time.Time
	// aPaidAfter counts the payments of the first worker's first run
	// booked after stepAt.
	aPaidAfter int64
	runs       map[string][]redislock.Run
}

// TestForwardStepExpiresLockInVM is the forward step of
// docs/incident-replay.md with a real kernel: Debian's redis-server and
// clockwatch in a qemu guest, the guest's clock stepped +31 s.
//
// First in the guest alone (cmd/stepguest): a lock with PX 30000 taken and
// held, the step: the key is gone at once, a second worker takes the lock
// while the first, counting on the monotonic clock, believes it has about
// 29 s left; the guest's clockwatch records a +31 s step.
//
// Then the job itself, from "another node" (the host): two workers
// (redislock.Worker) race for the lock on the guest's Redis and pay orders
// into a real PostgreSQL; a clockwatch on the host measures the guest's
// clockwatch as its peer. Three variants, each with its own +31 s step once
// the first worker has paid five orders: (a) no guard, no watch: both pay,
// double payments; (b) every worker watches the Redis master's node
// (watch_peer): the first stops when it hears of the step, and the window
// until then is counted; (c) the fence: zero double payments.
func TestForwardStepExpiresLockInVM(t *testing.T) {
	redisServer := testtool.Require(t, "redis-server")
	dir := t.TempDir()
	stepguest := vm.NewBuilder(dir).Build(t, "../cmd/stepguest") // skips (fails under CI) without qemu
	tools, err := replay.FindTools()
	if err != nil {
		testtool.Missing(t, err.Error()+"; run scripts/test-deps.sh")
	}
	replay.QuietRedisClient()
	clockwatch := buildInMainModule(t, dir, "./cmd/clockwatch")

	// PostgreSQL and the schema, on the host.
	pg, err := replay.StartPostgres(t.Context(), tools, dir)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(pg.Stop)
	db, err := sql.Open("pgx", pg.DSN)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { db.Close() })
	fence, err := stepdown.NewFence(stepdown.PostgreSQL, "")
	if err != nil {
		t.Fatal(err)
	}
	if err := redislock.Migrate(t.Context(), db, fence); err != nil {
		t.Fatal(err)
	}

	// The host's clockwatch, watching the guest's.
	redisPort, guestPeer, hostPeer := freePort(t, "tcp"), freePort(t, "udp"), freePort(t, "udp")
	gate := startGates(t)
	hostDir := filepath.Join(dir, "host-clockwatch")
	if err := os.Mkdir(hostDir, 0o700); err != nil {
		t.Fatal(err)
	}
	socket := hostClockwatch(t, clockwatch, hostDir, hostPeer, guestPeer)
	master := fmt.Sprintf("127.0.0.1:%d", guestPeer) // the Redis master's node, as the host's clockwatch names it
	watch := redislock.WatchPeer(t.Context(), socket, master)

	guestConf := quietSources + fmt.Sprintf("stepdown:\n  hold_down: %s\n  triggers:\n", guestHoldDown) +
		"    error_bound: {enabled: false}\n    unsynchronized: {enabled: false}\n    peer_offset: {enabled: false}\n" +
		fmt.Sprintf(peersConfig, ":9847", fmt.Sprintf("10.0.2.2:%d", hostPeer))
	guestCfg := filepath.Join(dir, "guest-clockwatch.yml")
	if err := os.WriteFile(guestCfg, []byte(guestConf), 0o600); err != nil {
		t.Fatal(err)
	}
	if out, err := exec.Command(clockwatch, "--config.file="+guestCfg, "--config.check").CombinedOutput(); err != nil {
		t.Fatalf("the guest clockwatch's configuration: %v\n%s\n%s", err, out, guestConf)
	}
	var steps strings.Builder
	for _, v := range variants {
		fmt.Fprintf(&steps, "gate step-%[1]s\n%[2]s setoffset:%[3]s\necho CW-STEPPED %[1]s\n", v.name, vm.ClockstepPath, stepSize)
	}
	script := fmt.Sprintf(`set -e
trap '[ $? = 0 ] || { echo "redis log:"; cat /tmp/redis.log; echo "clockwatch log:"; tail -n 40 /tmp/clockwatch.log; }' EXIT
gate() { until wget -q -O /dev/null "http://10.0.2.2:%[1]d/go/$1" 2>/dev/null; do usleep 100000; done; }
ip link set eth0 up
ip addr add 10.0.2.15/24 dev eth0
ip route add default via 10.0.2.2
printf '%[2]s' >/tmp/clockwatch.yml
clockwatch --config.file=/tmp/clockwatch.yml --web.listen-address=%[3]s >/tmp/clockwatch.log 2>&1 &
cw_wait_metric %[4]s '^%[5]s 1' 120
/usr/bin/redis-server --port 6379 --bind 0.0.0.0 --protected-mode no --save '' --appendonly no >/tmp/redis.log 2>&1 &
stepguest -step %[6]s
cw_wait_count %[7]s/%[8]s '"type":"step"' 1
cw_wait_metric %[4]s 'clockwatch_stepdown_state{state="ok"} 1'
echo CW-READY
%[9]sgate done
cw_wait_count %[7]s/%[8]s '"type":"step"' %[10]d
clockwatch events --json | sed 's/^{/CW-RESULT {"kind":"clockwatch_event",/'
`, gate.port, strings.ReplaceAll(guestConf, "\n", `\n`), listen, metricsURL, step.MetricWatcherUp, stepSize,
		journalDir, journal.EventsFile, steps.String(), 1+len(variants))
	m, err := vm.Boot(t, vm.Options{
		Files: map[string]string{
			"/bin/clockwatch": clockwatch,
			vm.ClockstepPath:  buildInMainModule(t, dir, "./test/vm/clockstep"),
			"/bin/stepguest":  stepguest,
		},
		Dynamic:   map[string]string{"/usr/bin/redis-server": redisServer},
		Script:    script,
		CPUs:      2,
		MemoryMiB: 512,
		Modules:   vm.NetModules,
		Timeout:   10 * time.Minute,
		QemuArgs: []string{"-netdev", fmt.Sprintf("user,id=n0,hostfwd=tcp:127.0.0.1:%d-:6379,hostfwd=udp:127.0.0.1:%d-:9847", redisPort, guestPeer),
			"-device", "virtio-net-pci,netdev=n0"},
	})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(m.Kill)
	var logs testtool.SyncBuffer
	t.Cleanup(func() {
		if t.Failed() {
			t.Logf("workers' log:\n%s", logs.String())
		}
	})
	if _, err := m.WaitLine(regexp.MustCompile(`^CW-READY`), 5*time.Minute); err != nil {
		t.Fatal(err)
	}
	epoch := waitPeerOK(t, watch, 0)

	log := slog.New(slog.NewTextHandler(&logs, nil))
	var outs []outcome
	for i, v := range variants {
		o := runVariant(t, m, gate, db, fence, watch, log, v, fmt.Sprintf("comp:lock:recon:2025-09-%02d", 15+i), redisPort)
		outs = append(outs, o)
		// The next variant begins with the guest's clock trusted again,
		// its step known.
		epoch = waitPeerOK(t, watch, epoch+1)
	}
	gate.Open("done")

	res, err := m.Wait(false)
	if err != nil {
		t.Fatal(err)
	}
	t.Logf("boot to /init %v, script %v, whole run %v", res.Booted, res.ScriptTime, res.Elapsed)
	checkInGuest(t, res)
	checkVariants(t, outs)
}

// waitPeerOK waits until the host's clockwatch says the guest's clock is ok
// with an epoch of at least epoch (that many steps seen), and returns it.
func waitPeerOK(t *testing.T, w *redislock.PeerWatch, epoch uint64) uint64 {
	t.Helper()
	deadline := time.Now().Add(time.Minute)
	for {
		m := w.Last()
		if m.State == stepdown.StateOK && m.Epoch >= epoch {
			return m.Epoch
		}
		if time.Now().After(deadline) {
			t.Fatalf("the host's clockwatch never said the guest's clock is ok with epoch %d or later: last %+v", epoch, m)
		}
		time.Sleep(50 * time.Millisecond)
	}
}

// runVariant runs the job once with v's defences: two workers, the guest's
// clock stepped +31 s once the first has paid paidBeforeStep orders.
func runVariant(t *testing.T, m *vm.Machine, gate *gates, db *sql.DB, fence *stepdown.Fence, watch *redislock.PeerWatch,
	log *slog.Logger, v variant, key string, redisPort int) outcome {
	t.Helper()
	o := outcome{variant: v, runs: map[string][]redislock.Run{}}
	ctx, cancel := context.WithTimeout(t.Context(), 2*time.Minute)
	defer cancel()
	if err := redislock.Seed(ctx, db, stepdown.DefaultFenceTable, orders); err != nil {
		t.Fatal(err)
	}
	var (
		mu     sync.Mutex
		locks  = map[string][]time.Time{}
		aLock  = make(chan struct{})
		closed bool
	)
	newWorker := func(name string) *redislock.Worker {
		rdb := redis.NewClient(&redis.Options{Addr: fmt.Sprintf("127.0.0.1:%d", redisPort), MaxRetries: -1})
		t.Cleanup(func() { rdb.Close() })
		cfg := redislock.WorkerConfig{
			Name: name, Redis: rdb, DB: db, Key: key, TTL: ttl, RetryEvery: retryEvery, PayEvery: payEvery,
			Log: log.With("variant", v.name),
			OnLock: func(h redislock.Holding) {
				mu.Lock()
				defer mu.Unlock()
				locks[h.Worker] = append(locks[h.Worker], h.At)
				if h.Worker == "worker-a" && !closed {
					closed = true
					close(aLock)
				}
			},
		}
		if v.watch {
			cfg.ServerClock = watch
		}
		if v.fence {
			cfg.Epoch, cfg.Fence = redislock.EpochSequence, fence
		}
		w, err := redislock.NewWorker(cfg)
		if err != nil {
			t.Fatal(err)
		}
		return w
	}
	a, b := newWorker("worker-a"), newWorker("worker-b")
	var wg sync.WaitGroup
	wg.Add(1)
	go func() { defer wg.Done(); a.Run(ctx) }()
	select {
	case <-aLock:
	case <-ctx.Done():
		t.Fatalf("variant %s: worker-a never got the lock", v.name)
	}
	wg.Add(1)
	go func() { defer wg.Done(); b.Run(ctx) }()
	for paid := 0; paid < paidBeforeStep; time.Sleep(10 * time.Millisecond) {
		if err := db.QueryRowContext(ctx, `SELECT count(*) FROM pay_comp_flow WHERE worker = 'worker-a'`).Scan(&paid); err != nil {
			t.Fatal(err)
		}
	}
	mu.Lock()
	bBefore := len(locks["worker-b"])
	mu.Unlock()
	if bBefore != 0 {
		t.Errorf("variant %s: worker-b got the lock while worker-a held it, before any step", v.name)
	}
	o.gateAt = time.Now()
	gate.Open("step-" + v.name)
	stepped, err := m.WaitLine(regexp.MustCompile(`^CW-STEPPED `+v.name+`$`), time.Minute)
	if err != nil {
		t.Fatal(err)
	}
	o.stepAt = stepped.At
	lines := m.Lines()
	for i := len(lines) - 1; i >= 0; i-- {
		if lines[i].At.After(stepped.At) {
			continue
		}
		if strings.HasPrefix(lines[i].Text, guest.ResultPrefix+`{"kind":"`+guest.KindStep+`"`) {
			o.stepAt = lines[i].At
			break
		}
	}
	done := make(chan struct{})
	go func() { wg.Wait(); close(done) }()
	select {
	case <-done:
	case <-ctx.Done():
		t.Fatalf("variant %s: the workers did not finish: A %+v, B %+v", v.name, a.Stats(), b.Stats())
	}
	for _, w := range []*redislock.Worker{a, b} {
		s := w.Stats()
		o.runs[s.Worker] = s.Runs
	}
	if len(o.runs["worker-a"]) > 0 {
		o.aFirst = o.runs["worker-a"][0]
	}
	if bl := locks["worker-b"]; len(bl) > 0 {
		o.bLock = bl[0]
	}
	if o.tally, err = redislock.Count(t.Context(), db); err != nil {
		t.Fatal(err)
	}
	// Its first run's payments after the step (with the watch it pays
	// again later, under a lock taken once the guest's clock is trusted).
	if err := db.QueryRowContext(t.Context(), `SELECT count(*) FROM pay_comp_flow WHERE worker = 'worker-a' AND created_at > $1 AND created_at <= $2`,
		o.stepAt, o.aFirst.End).Scan(&o.aPaidAfter); err != nil {
		t.Fatal(err)
	}
	return o
}

// checkVariants asserts what each defence did.
func checkVariants(t *testing.T, outs []outcome) {
	t.Helper()
	var unguarded int64 = -1
	for _, o := range outs {
		stepToStop := o.aFirst.End.Sub(o.stepAt)
		t.Logf("%s (%s): orders paid twice %d (%d excess payments); worker-a's first run: %s, %d paid, %d after the step; step → worker-a's job ended %v (%v from the host opening the gate), step → worker-b's lock %v; runs %s",
			o.name, o.title, o.tally.PaidTwice, o.tally.Excess, o.aFirst.Outcome, o.aFirst.Paid, o.aPaidAfter,
			stepToStop.Round(time.Millisecond), o.aFirst.End.Sub(o.gateAt).Round(time.Millisecond), o.bLock.Sub(o.stepAt).Round(time.Millisecond), runsString(o.runs))
		if o.tally.Reconciled != o.tally.Orders {
			t.Errorf("%s: %d of %d orders reconciled: the day's job did not finish", o.name, o.tally.Reconciled, o.tally.Orders)
		}
		if o.bLock.IsZero() {
			t.Errorf("%s: worker-b never got the lock after the step", o.name)
		}
		switch {
		case !o.watch && !o.fence:
			unguarded = o.tally.PaidTwice
			if o.tally.PaidTwice == 0 || o.aFirst.Outcome != "done" || o.aPaidAfter == 0 {
				t.Errorf("%s: %d orders paid twice, worker-a %s with %d payments after the step; want both paying after the step", o.name, o.tally.PaidTwice, o.aFirst.Outcome, o.aPaidAfter)
			}
		case o.watch:
			// It stops with the first round of the host's clockwatch
			// after the step, before its next payment.
			if o.aFirst.Outcome != "stopped" {
				t.Errorf("%s: worker-a's job ended %q, want stopped by the lock server's clock", o.name, o.aFirst.Outcome)
			}
			if !o.aFirst.End.After(o.gateAt) || stepToStop > peersInterval+2*time.Second {
				t.Errorf("%s: worker-a stopped %v after the step, want within the peers' interval (%v) and its exchanges", o.name, stepToStop, peersInterval)
			}
			if limit := int64(stepToStop/payEvery) + 1; o.aPaidAfter > limit {
				t.Errorf("%s: worker-a paid %d orders after the step, more than its pace allows before it stopped (%d)", o.name, o.aPaidAfter, limit)
			}
			if unguarded >= 0 && o.tally.PaidTwice >= unguarded {
				t.Errorf("%s: %d orders paid twice with the watch, %d without: the watch did not narrow the window", o.name, o.tally.PaidTwice, unguarded)
			}
		case o.fence:
			if o.tally.PaidTwice != 0 || o.tally.Excess != 0 {
				t.Errorf("%s: %d orders paid twice with the fence, want none", o.name, o.tally.PaidTwice)
			}
			if o.aFirst.Outcome != "fenced" {
				t.Errorf("%s: worker-a's job ended %q, want fenced once worker-b claimed", o.name, o.aFirst.Outcome)
			}
		}
	}
}

func runsString(runs map[string][]redislock.Run) string {
	var parts []string
	for _, w := range []string{"worker-a", "worker-b"} {
		var rs []string
		for _, r := range runs[w] {
			rs = append(rs, fmt.Sprintf("%s/%d", r.Outcome, r.Paid))
		}
		parts = append(parts, w+"["+strings.Join(rs, " ")+"]")
	}
	return strings.Join(parts, " ")
}

// checkInGuest asserts the in-guest replay (cmd/stepguest) and the guest's
// clockwatch journal: one +31 s step for stepguest and one per variant.
func checkInGuest(t *testing.T, res *vm.Result) {
	t.Helper()
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
	if len(seen) != 1+len(variants) {
		t.Errorf("clockwatch in the guest recorded %d steps, want %d of +%s", len(seen), 1+len(variants), stepSize)
	}
	for _, e := range seen {
		if (e.Step - stepSize).Abs() > 50*time.Millisecond {
			t.Errorf("clockwatch in the guest recorded a step of %v, want +%s", e.Step, stepSize)
		}
	}
	t.Logf("in the guest: PTTL before the step %d ms; step → B's lock %s; A still believed %d ms were left", r.PTTLBeforeMS, stepToB, r.AStillBelievesMS)
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
