package ptp

import (
	"bytes"
	"context"
	"fmt"
	"log/slog"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/clockwatch/clockwatch/internal/loop"
	"github.com/clockwatch/clockwatch/internal/policy"
	"github.com/clockwatch/clockwatch/internal/testtool"
	"github.com/clockwatch/clockwatch/internal/timesource"
	"github.com/clockwatch/clockwatch/stepdown"
	"github.com/facebook/time/ptp/protocol"
)

// nsEnv is set when the test runs inside its own user and network
// namespace.
const nsEnv = "CLOCKWATCH_PTP4L_TEST_NETNS"

// TestPtp4l runs two real ptp4l with software timestamping on a veth pair
// between two network namespaces and reads both over their management
// sockets: a grandmaster (clock class 6) and a slave-only clock. Both run
// with free_running 1, and inside a user namespace where they have no
// capability over this machine's clock (CAP_SYS_TIME counts only in the
// initial user namespace): they never touch it. A free-running servo never
// locks, so the slave stays UNCALIBRATED: it has an offset but is not
// synchronised (the locked SLAVE state is covered in test/vm). The master
// is then stopped: the slave loses it and its grandmaster changes.
func TestPtp4l(t *testing.T) {
	testtool.Short(t)
	if os.Getenv(nsEnv) == "" {
		ptp4l := testtool.Require(t, "ptp4l")
		unshare := testtool.Require(t, "unshare")
		testtool.Require(t, "nsenter")
		testtool.Require(t, "ip")
		t.Parallel()
		args := []string{"--user", "--map-root-user", "--net", "--",
			os.Args[0], "-test.run=^TestPtp4l$", "-test.v", "-test.count=1"}
		if *capture {
			args = append(args, "-capture")
		}
		cmd := exec.Command(unshare, args...)
		cmd.SysProcAttr = orphanKill()
		cmd.Env = append(os.Environ(), nsEnv+"=1", "CLOCKWATCH_PTP4L_BIN="+ptp4l)
		// The inner test stops its ptp4l and the namespace holder by PID
		// on the way out (the namespaces go with them), and the kernel
		// kills each of them should the test die first (orphanKill).
		out, err := cmd.CombinedOutput()
		t.Logf("inside the namespace:\n%s", out)
		if err != nil {
			t.Fatalf("the namespaced test failed: %v", err)
		}
		return
	}

	dir := t.TempDir()
	ns := newNamespaces(t, dir)
	masterSock, slaveSock := filepath.Join(dir, "master.sock"), filepath.Join(dir, "slave.sock")
	// Announce every 250 ms, sync every 125 ms: the slave follows within
	// about a second, and loses the master 750 ms after it stops.
	common := "[global]\nfree_running 1\nlogAnnounceInterval -2\nlogSyncInterval -3\nlogMinDelayReqInterval -3\n"
	// The master has a second port, on a veth pair of its own: a boundary
	// of two ports answers port data sets once per port.
	master := ns.ptp4l(t, "master", "", []string{"cwpa", "cwpc"}, common+"priority1 10\nclockClass 6\nclockAccuracy 0x21\nuds_address "+masterSock+"\n")
	ns.ptp4l(t, "slave", ns.holder, []string{"cwpb"}, common+"slaveOnly 1\nuds_address "+slaveSock+"\n")

	// The master runs in this test's network namespace: an abstract reply
	// socket (the default) reaches it. The slave runs in the other one,
	// which abstract sockets do not cross: a reply socket file does.
	mc := NewClient(masterSock, 0, "", 200*time.Millisecond)
	defer mc.Close()
	sp := NewPoller(Config{Common: timesource.Common{Mode: timesource.ModeOn, PollInterval: time.Second, Timeout: 200 * time.Millisecond}, Address: slaveSock, ReplySocketDir: dir}, slog.New(slog.DiscardHandler))
	defer sp.client.Close()

	var m Data
	s := waitFor(t, sp, "the slave to follow the master", func(s Snapshot) bool {
		var err error
		if m, err = mc.Poll(context.Background()); err != nil {
			return false
		}
		return s.Up && s.State == protocol.PortStateUncalibrated && s.Data.GrandmasterPresent && s.Data.MeanPathDelay > 0 && m.State() == protocol.PortStateMaster
	})
	t.Logf("master %+v", m)
	t.Logf("slave %+v", s.Data)

	wantPorts := []Port{{Number: 1, Interface: "cwpa", State: protocol.PortStateMaster, Timestamping: "SOFTWARE"},
		{Number: 2, Interface: "cwpc", State: protocol.PortStateMaster, Timestamping: "SOFTWARE"}}
	if !m.Grandmaster() || m.GrandmasterPresent || m.ClockClass != 6 || m.ClockAccuracy != 0x21 || !m.SoftwareTimestamping() ||
		!slices.Equal(m.Ports, wantPorts) || m.StepsRemoved != 0 {
		t.Errorf("master %+v: want its own grandmaster, class 6, accuracy 0x21, two software-timestamped MASTER ports cwpa and cwpc", m)
	}
	d := s.Data
	if d.GrandmasterIdentity != m.ClockIdentity || d.GrandmasterClockClass != 6 || d.StepsRemoved != 1 || !d.SlaveOnly ||
		d.ParentPort != m.ClockIdentity+"-1" || d.MeanPathDelay <= 0 || d.MeanPathDelay > 10*time.Millisecond ||
		d.Time.CurrentUTCOffset != 37 || d.Time.TimeSource != 0xa0 || len(d.Ports) != 1 || d.Ports[0].Interface != "cwpb" {
		t.Errorf("slave %+v: want grandmaster %s class 6 one step away, a mean path delay in (0, 10ms], TAI−UTC 37, internal oscillator", d, m.ClockIdentity)
	}
	// Both clocks are this machine's clock: the offset is the noise of
	// software timestamps.
	if d.OffsetFromMaster.Abs() > 10*time.Millisecond {
		t.Errorf("slave's offset from master %v: want within 10ms (both are this machine's clock)", d.OffsetFromMaster)
	}

	r := s.Reading()
	want := timesource.Reading{Source: "ptp4l", Found: true, Up: true, HasData: true, Synchronized: false,
		Offset: d.OffsetFromMaster, ErrorBound: d.OffsetFromMaster.Abs() + d.MeanPathDelay + 100*time.Nanosecond,
		Leap: timesource.LeapUnsynchronized, LastSuccess: s.LastSuccess, Grandmaster: m.ClockIdentity}
	r.Detail = ""
	if r != want {
		t.Errorf("slave's reading\n%+v, want\n%+v", r, want)
	}
	mr := Snapshot{Found: true, Tally: loop.Tally{Up: true}, HaveData: true, Data: m}.Reading()
	if !mr.HasData || !mr.Synchronized || mr.Offset != 0 || mr.ErrorBound != 100*time.Nanosecond || mr.Leap != timesource.LeapNone {
		t.Errorf("master's reading %+v: want synchronised (class 6), offset 0, error bound 100ns (accuracy 0x21)", mr)
	}
	if *capture {
		if err := captureReplies(masterSock, "", "ptp4l-3.1-grandmaster.replies"); err != nil {
			t.Fatal(err)
		}
		if err := captureReplies(slaveSock, dir, "ptp4l-3.1-slave-uncalibrated.replies"); err != nil {
			t.Fatal(err)
		}
	}
	if lines := fmt.Sprint(Lines(s, time.Now())); !strings.Contains(lines, "port UNCALIBRATED") || !strings.Contains(lines, m.ClockIdentity) {
		t.Errorf("status lines:\n%s", lines)
	}

	// The stepdown policy on the real slave's readings: its port stays
	// UNCALIBRATED, so ptp4l's unsynchronized trigger ("port not SLAVE")
	// fires once its grace is over, and not before.
	pol := policy.New(testPolicyConfig(), 0)
	pol.Await("clocks")
	pol.ProbeOK("clocks", 0)
	origin := time.Now()
	mono := func() time.Duration { return time.Since(origin) }
	var evs []policy.Event
	for pol.Status().State != stepdown.StateStepdown && mono() < 5*time.Second {
		sp.Poll(context.Background())
		evs = append(evs, pol.Reading(sp.Reading(), mono())...)
		time.Sleep(100 * time.Millisecond)
	}
	if len(evs) != 1 || evs[0].Reason != stepdown.ReasonUnsynchronized || evs[0].Source != SourceName ||
		evs[0].Mono <= testGrace || !strings.Contains(evs[0].Detail, "port UNCALIBRATED") {
		t.Errorf("policy events on an UNCALIBRATED slave: %+v\nwant one stepdown, unsynchronized from ptp4l, after its %s grace, naming the port state", evs, testGrace)
	} else {
		t.Logf("stepdown after %s: %s", evs[0].Mono.Round(time.Millisecond), evs[0].Detail)
	}

	// What a poll costs against a real ptp4l (six requests), for
	// docs/performance.md.
	const polls = 50
	start := time.Now()
	for range polls {
		if _, err := mc.Poll(context.Background()); err != nil {
			t.Fatal(err)
		}
	}
	t.Logf("a poll of ptp4l (6 requests, abstract reply socket) took %v on average over %d", time.Since(start)/polls, polls)

	// ptp4l drops management messages of another domain without a word.
	other := NewClient(slaveSock, 7, dir, 100*time.Millisecond)
	if _, err := other.Poll(context.Background()); err == nil || !strings.Contains(err.Error(), "is ptp.domain (7) ptp4l's domainNumber?") {
		t.Errorf("polling in domain 7: %v, want the domain named", err)
	}
	other.Close()

	// The slave's ptp4l runs in a network namespace of its own: an abstract
	// reply socket (the default) never gets its answers, and the error says
	// so and what to set (a pod without hostNetwork, issue 21).
	cross := NewClient(slaveSock, 0, "", 200*time.Millisecond)
	if _, err := cross.Poll(context.Background()); err == nil || !strings.Contains(err.Error(), "abstract sockets do not cross network namespaces") ||
		!strings.Contains(err.Error(), "set ptp.reply_socket_dir") {
		t.Errorf("polling ptp4l in another network namespace with an abstract reply socket: %v, want the namespaces named", err)
	}
	cross.Close()

	// Lose the master.
	master.stop(t)
	// A slave-only ptp4l 3.1 keeps the lost master's parent data set (and
	// gmPresent) in LISTENING: only the port state says it is lost.
	s = waitFor(t, sp, "the slave to lose the master", func(s Snapshot) bool { return s.State == protocol.PortStateListening })
	r = s.Reading()
	if s.GrandmasterChanges != 0 || s.Grandmaster != m.ClockIdentity || r.HasData || r.Synchronized || !r.Up {
		t.Errorf("after the master stopped: %+v\nreading %+v: want no grandmaster change (lost is not changed), the last grandmaster kept, up without data", s, r)
	}
	if entries, _ := filepath.Glob(filepath.Join(dir, "clockwatch-ptp4l.*")); len(entries) != 1 {
		t.Errorf("reply sockets in %s: %v, want the poller's only (the domain-7 client's removed)", dir, entries)
	}
	evs = pol.Reading(r, mono())
	if len(evs) != 0 {
		t.Errorf("policy events on losing the master: %+v, want none (already in stepdown, the grandmaster not changed)", evs)
	}

	// Another grandmaster on the same link: the slave follows it, and the
	// policy steps down for grandmaster_changed (the time can move by the
	// two grandmasters' difference).
	const gm2 = "0a0b0c.fffe.0d0e0f"
	ns.ptp4l(t, "master2", "", []string{"cwpa"}, common+"priority1 10\nclockClass 6\nclockIdentity "+gm2+"\nuds_address "+filepath.Join(dir, "master2.sock")+"\n")
	s = waitFor(t, sp, "the slave to follow the second master", func(s Snapshot) bool { return s.Grandmaster == gm2 })
	if s.GrandmasterChanges != 1 || s.PreviousGrandmaster != m.ClockIdentity {
		t.Errorf("after the second master: %+v, want one grandmaster change from %s", s, m.ClockIdentity)
	}
	evs = pol.Reading(s.Reading(), mono())
	if len(evs) != 1 || evs[0].Reason != stepdown.ReasonGrandmasterChanged || evs[0].Source != SourceName ||
		!strings.Contains(evs[0].Detail, gm2) || !strings.Contains(evs[0].Detail, m.ClockIdentity) {
		t.Errorf("policy events on the new grandmaster: %+v, want one grandmaster_changed from ptp4l naming both", evs)
	} else {
		t.Logf("%s", evs[0].Detail)
	}
}

// testGrace is the port-state grace of the namespaced test.
const testGrace = time.Second

// testPolicyConfig is the stepdown policy's configuration for the
// namespaced test: ptp4l's port-state trigger with a short grace, and no
// offset or error bound triggers (software timestamps on a busy host can
// exceed 100 µs now and then: not what this test is about).
func testPolicyConfig() policy.Config {
	cfg := policy.Config{HoldDown: time.Second, Triggers: policy.DefaultTriggers()}
	tr := policy.SourceTriggers{Unsynchronized: policy.Grace{Enabled: true, Grace: testGrace}}
	cfg.Triggers.Sources = map[string]policy.SourceTriggers{SourceName: tr}
	return cfg
}

func waitFor(t *testing.T, p *Poller, what string, ok func(Snapshot) bool) Snapshot {
	t.Helper()
	for deadline := time.Now().Add(20 * time.Second); ; {
		p.Poll(context.Background())
		s := p.Snapshot()
		if ok(s) {
			return s
		}
		if time.Now().After(deadline) {
			t.Fatalf("waiting for %s: last snapshot %+v", what, s)
		}
		time.Sleep(100 * time.Millisecond)
	}
}

// namespaces is the second network namespace, held open by a sleeping
// process, with one end of a veth pair in it and the other in the test's.
type namespaces struct {
	dir    string
	holder string // PID of the process holding the second namespace
}

func newNamespaces(t *testing.T, dir string) *namespaces {
	t.Helper()
	run(t, "ip", "link", "set", "lo", "up")
	hold := exec.Command("unshare", "--net", "--", "sleep", "600")
	hold.SysProcAttr = orphanKill()
	if err := hold.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { stop(hold) })
	pid := strconv.Itoa(hold.Process.Pid)
	// unshare execs sleep once the namespace exists: wait for that.
	for deadline := time.Now().Add(5 * time.Second); ; {
		self, _ := os.Readlink("/proc/self/ns/net")
		theirs, _ := os.Readlink("/proc/" + pid + "/ns/net")
		if exe, _ := os.Readlink("/proc/" + pid + "/exe"); strings.HasSuffix(exe, "/sleep") && theirs != self {
			break
		}
		if time.Now().After(deadline) {
			t.Fatal("the namespace holder did not start")
		}
		time.Sleep(10 * time.Millisecond)
	}
	run(t, "ip", "link", "add", "cwpa", "type", "veth", "peer", "name", "cwpb")
	run(t, "ip", "link", "set", "cwpb", "netns", pid)
	run(t, "ip", "addr", "add", "10.201.0.1/24", "dev", "cwpa")
	run(t, "ip", "link", "set", "cwpa", "up")
	run(t, "ip", "link", "add", "cwpc", "type", "veth", "peer", "name", "cwpd")
	run(t, "ip", "addr", "add", "10.201.1.1/24", "dev", "cwpc")
	run(t, "ip", "link", "set", "cwpc", "up")
	run(t, "ip", "link", "set", "cwpd", "up")
	in := []string{"nsenter", "--target", pid, "--net", "--"}
	run(t, append(in, "ip", "link", "set", "lo", "up")...)
	run(t, append(in, "ip", "addr", "add", "10.201.0.2/24", "dev", "cwpb")...)
	run(t, append(in, "ip", "link", "set", "cwpb", "up")...)
	return &namespaces{dir: dir, holder: pid}
}

func run(t *testing.T, args ...string) {
	t.Helper()
	if out, err := exec.Command(args[0], args[1:]...).CombinedOutput(); err != nil {
		t.Fatalf("%s: %v\n%s", strings.Join(args, " "), err, out)
	}
}

// daemon is a ptp4l started by the test.
type daemon struct {
	cmd *exec.Cmd
	log *bytes.Buffer
}

// ptp4l starts ptp4l -S on the interfaces with conf, in the holder's
// namespace when holder is set; it is stopped at the end of the test.
func (n *namespaces) ptp4l(t *testing.T, name, holder string, ifaces []string, conf string) *daemon {
	t.Helper()
	path := filepath.Join(n.dir, name+".conf")
	if err := os.WriteFile(path, []byte(conf), 0o644); err != nil {
		t.Fatal(err)
	}
	args := []string{os.Getenv("CLOCKWATCH_PTP4L_BIN"), "-S", "-m", "-f", path}
	for _, i := range ifaces {
		args = append(args, "-i", i)
	}
	if holder != "" {
		args = append([]string{"nsenter", "--target", holder, "--net", "--"}, args...)
	}
	d := &daemon{cmd: exec.Command(args[0], args[1:]...), log: &bytes.Buffer{}}
	d.cmd.Stdout, d.cmd.Stderr = d.log, d.log
	d.cmd.SysProcAttr = orphanKill()
	if err := d.cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		if stop(d.cmd) {
			t.Logf("%s ptp4l's log:\n%s", name, d.log)
		}
	})
	return d
}

func (d *daemon) stop(t *testing.T) {
	t.Helper()
	stop(d.cmd)
	t.Logf("ptp4l's log:\n%s", d.log)
}

// orphanKill makes the kernel kill a process the test started if the test
// dies before its cleanup runs: nothing outlives it (unshare and nsenter
// exec their command, which keeps the setting).
func orphanKill() *syscall.SysProcAttr { return &syscall.SysProcAttr{Pdeathsig: syscall.SIGKILL} }

// stop ends a process the test started, by its PID; false when it had
// stopped already.
func stop(cmd *exec.Cmd) bool {
	if cmd.ProcessState != nil {
		return false
	}
	cmd.Process.Signal(syscall.SIGTERM)
	done := make(chan struct{})
	go func() { cmd.Wait(); close(done) }()
	select {
	case <-done:
	case <-time.After(3 * time.Second):
		cmd.Process.Kill()
		<-done
	}
	return true
}
