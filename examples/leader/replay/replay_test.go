package replay

import (
	"bytes"
	"context"
	"fmt"
	"log/slog"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/clockwatch/clockwatch/examples/leader"
	"github.com/clockwatch/clockwatch/internal/testtool"
)

// testEnv is what the tests share: etcd, PostgreSQL and one clockwatch
// daemon per node.
type testEnv struct {
	Env
	dir     string
	daemons map[string]*Daemon
}

// startEnv starts etcd, PostgreSQL and the clockwatch daemons of nodes A and
// D for a test, stopped at its end.
func startEnv(t *testing.T) testEnv {
	t.Helper()
	testtool.Short(t)
	tools, err := FindTools()
	if err != nil {
		testtool.Missing(t, err.Error()+"; run scripts/test-deps.sh")
	}
	ctx := t.Context()
	dir := t.TempDir()
	etcd, err := StartEtcd(ctx, tools.Etcd, dir)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(etcd.Stop)
	pg, err := StartPostgres(ctx, tools, dir)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(pg.Stop)
	bin, err := BuildClockwatch(ctx, dir)
	if err != nil {
		t.Fatal(err)
	}
	daemons := map[string]*Daemon{}
	for _, node := range []string{"A", "D"} {
		d, err := StartDaemon(ctx, bin, dir, node, nil)
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(d.Stop)
		daemons[node] = d
	}
	env := Env{Etcd: etcd.Endpoint, DSN: pg.DSN, Clockwatch: func(ctx context.Context, node string) (Clockwatch, error) {
		return daemons[node].Subscribe(ctx), nil
	}}
	return testEnv{Env: env, dir: dir, daemons: daemons}
}

// TestIncidentReplay runs the scenarios with a 3 s lease (the incident's 15 s
// scaled by 1/5, the step with it: -2.48 s) and asserts the shape the issue
// predicts.
func TestIncidentReplay(t *testing.T) {
	te := startEnv(t)
	env := te.Env
	var logs bytes.Buffer
	env.Log = slog.New(slog.NewTextHandler(&logs, &slog.HandlerOptions{Level: slog.LevelDebug}))
	p := Scaled(3 * time.Second)
	results, err := RunAll(t.Context(), env, p, nil)
	if err != nil {
		t.Fatalf("%v\nnode logs:\n%s", err, logs.String())
	}
	var table bytes.Buffer
	if err := Format(&table, results); err != nil {
		t.Fatal(err)
	}
	if err := FormatTerms(&table, results); err != nil {
		t.Fatal(err)
	}
	t.Logf("TTL %s, step %s:\n%s", p.TTL, p.Step, table.String())

	for _, r := range results {
		name := r.Scenario.Name
		if r.A.Landed == 0 || r.D.Landed == 0 {
			t.Errorf("%s: A landed %d, D landed %d entries, want both > 0", name, r.A.Landed, r.D.Landed)
		}
		// etcd gives D the lease only when A's expires: at least 2/3 of
		// the TTL after the fault (the last renewal is at most TTL/3 old).
		if r.LeaseToD < p.TTL*2/3-100*time.Millisecond {
			t.Errorf("%s: D led %s after the fault, before A's lease could expire", name, r.LeaseToD)
		}
		if r.Scenario.LeaseClock == leader.LeaseClockMonotonic {
			// The step no longer stretches A's lease: A stops when its
			// lease runs out by its own monotonic clock, about when etcd
			// expires it (etcd checks expiry every 500 ms).
			if r.DoubleLeader > p.TTL/3 {
				t.Errorf("%s: both led for %s, want at most a moment", name, r.DoubleLeader)
			}
			if r.EventToStop < p.TTL/2 {
				t.Errorf("%s: A stopped %s after the fault, want when its lease ran out", name, r.EventToStop)
			}
			continue
		}
		if r.Scenario.Clockwatch {
			if r.DoubleLeader != 0 {
				t.Errorf("%s: both led for %s, want 0", name, r.DoubleLeader)
			}
			if r.StaleAttempted != 0 || r.StaleLanded != 0 || r.Rejected != 0 {
				t.Errorf("%s: stale writes attempted %d, landed %d, rejected %d; want none attempted",
					name, r.StaleAttempted, r.StaleLanded, r.Rejected)
			}
			if r.EventToStop > p.TTL/3 || r.EventToStop >= r.LeaseToD {
				t.Errorf("%s: A stopped %s after the fault (D led after %s), want at once", name, r.EventToStop, r.LeaseToD)
			}
			continue
		}
		// Without clockwatch A believes in its lease for |step| longer
		// than etcd does: the incident's double leader.
		if r.DoubleLeader < -p.Step/2 {
			t.Errorf("%s: both led for %s, want about %s", name, r.DoubleLeader, -p.Step)
		}
		if r.StaleAttempted == 0 {
			t.Errorf("%s: A attempted no writes after D won", name)
		}
		if r.Scenario.Fencing {
			if r.StaleLanded != 0 || r.Overwrote != 0 {
				t.Errorf("%s: %d stale writes (%d overwrites) reached the table, want 0", name, r.StaleLanded, r.Overwrote)
			}
			if r.Rejected == 0 {
				t.Errorf("%s: the fence rejected nothing", name)
			}
		} else {
			if r.StaleLanded == 0 {
				t.Errorf("%s: no stale writes reached the table, want the incident's duplicates", name)
			}
			if r.Rejected != 0 {
				t.Errorf("%s: %d rejected without a fence", name, r.Rejected)
			}
		}
	}
	if t.Failed() {
		t.Logf("node logs:\n%s", logs.String())
	}
	t.Run("leader process", func(t *testing.T) { testLeaderProcess(t, te) })
}

// testLeaderProcess runs cmd/leader as a process subscribed to node A's
// clockwatch: it leads and books, a drill makes it step down and, after the
// resume, lead again; SIGTERM ends it cleanly.
func testLeaderProcess(t *testing.T, te testEnv) {
	ctx := t.Context()
	bin := filepath.Join(te.dir, "leader")
	if out, err := exec.CommandContext(ctx, "go", "build", "-o", bin, "../cmd/leader").CombinedOutput(); err != nil {
		t.Fatalf("building cmd/leader: %v\n%s", err, out)
	}
	store, err := leader.NewPGStore(ctx, te.DSN)
	if err != nil {
		t.Fatal(err)
	}
	defer store.Close()
	var stderr bytesBuffer
	cmd := exec.Command(bin, "--name", "P", "--etcd", te.Etcd, "--dsn", te.DSN,
		"--stepdown-socket", te.daemons["A"].Socket, "--ttl", "3s", "--keepalive", "1s",
		"--election", fmt.Sprintf("/process/%d/", time.Now().UnixNano()))
	cmd.Stderr = &stderr
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	defer cmd.Process.Kill() // by PID, if the test fails before SIGTERM
	booked := func() bool {
		var n int
		err := store.Pool().QueryRow(ctx, "SELECT count(*) FROM ledger_log WHERE node = 'P'").Scan(&n)
		return err == nil && n > 0
	}
	if err := waitFor(ctx, 30*time.Second, "the leader process to book", booked); err != nil {
		t.Fatalf("%v\n%s", err, stderr.String())
	}
	// The drill must reach P while it leads. Under load P may lose its etcd
	// session on its own (a 3 s TTL) and be between terms when a drill
	// lands, so drill again until P has stepped down for one.
	const stepped = "clock cannot be trusted: stepdown (reason step"
	leading := func() bool {
		s := stderr.String()
		return strings.Count(s, "msg=leading") > strings.Count(s, `msg="stopped leading"`)
	}
	steppedDown := func() bool { return strings.Contains(stderr.String(), stepped) }
	for attempt := 1; !steppedDown(); attempt++ {
		if attempt > 5 {
			t.Fatalf("the leader process never stepped down for a drill:\n%s", stderr.String())
		}
		if err := waitFor(ctx, 30*time.Second, "the leader process to lead", leading); err != nil {
			t.Fatalf("%v\n%s", err, stderr.String())
		}
		drill := exec.CommandContext(ctx, te.daemons["A"].bin, "drill", "--socket", te.daemons["A"].Socket,
			"--reason", "step", "--step=-2.48s", "--hold", "500ms")
		if out, err := drill.CombinedOutput(); err != nil {
			t.Logf("clockwatch drill (attempt %d): %v\n%s", attempt, err, out)
		}
		_ = waitFor(ctx, 5*time.Second, "the leader process to step down", steppedDown)
	}
	leadsAgain := func() bool {
		s := stderr.String()
		return strings.Contains(s[strings.Index(s, stepped):], "msg=leading")
	}
	if err := waitFor(ctx, 30*time.Second, "the leader process to lead again after the resume", leadsAgain); err != nil {
		t.Fatalf("%v\n%s", err, stderr.String())
	}
	if err := cmd.Process.Signal(syscall.SIGTERM); err != nil {
		t.Fatal(err)
	}
	if err := cmd.Wait(); err != nil {
		t.Fatalf("leader process: %v\n%s", err, stderr.String())
	}
	out := stderr.String()
	if !regexp.MustCompile(`terms ([2-9]|[1-9][0-9]+),`).MatchString(out) {
		t.Errorf("leader process output lacks a count of two or more terms:\n%s", out)
	}
}
