package systemdvm_test

import (
	"bufio"
	"context"
	"crypto/sha256"
	"errors"
	"fmt"
	"io"
	"math"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/clockwatch/clockwatch/internal/testtool"
	"github.com/clockwatch/clockwatch/test/vm"
	"github.com/clockwatch/clockwatch/test/vm/guest"
)

// EnvVMTest opts in to this test.
const EnvVMTest = "CLOCKWATCH_SYSTEMD_VM_TEST"

// EnvFault names a fault of the daemon to inject in the first boot, to show
// that the checks fail for it (issue 32 item 6); empty injects none.
// "stall": the daemon is stopped (SIGSTOP) just before the guest's step and
// continued 2 s after it, as a daemon stuck in a system call would be: the
// stepdown comes 2 s late and "the daemon saw the step within 1 s" fails.
const EnvFault = "CLOCKWATCH_SYSTEMD_VM_FAULT"

const (
	cacheDir = "/var/cache/clockwatch-test"
	version  = "1.0.0"
	// vmTimeout bounds the whole boot, install and checks; the guest script
	// alone waits up to ~3 minutes when the service never becomes ready.
	// Under TCG the guest runs at the host's pace: the first boot took
	// over 14 min at host load 20–25 (make test-systemd-vm's go test
	// -timeout bounds it too: boot ends before that deadline).
	vmTimeout = 25 * time.Minute
)

func kernelPath() string {
	if k := os.Getenv("CLOCKWATCH_TEST_KERNEL"); k != "" {
		return k
	}
	return filepath.Join(cacheDir, "vmlinuz")
}

// vmclockFiles are what the second boot, the VMClock one, runs, from
// scripts/deps.d/42-vmclock.sh: qemu 10, whose -device vmclock gives the
// guest a VMClock page, Linux 7.3.4 and its ptp_vmclock.ko, which makes the
// page /dev/vmclock0 (Debian 12's 6.1 kernel has no such driver). Without
// them the test fails under CI and is skipped elsewhere. The first boot keeps
// the host's qemu and Debian's 6.1 kernel, whose timing the load checks were
// measured with (with qemu 10 and 7.3.4 the scrape flood ran ten times
// slower and the drill missed subscribers).
type vmclockFiles struct {
	qemu, kernel, module string
}

func vmclockPaths(t *testing.T) vmclockFiles {
	t.Helper()
	dir := os.Getenv(vm.VMClockEnv)
	if dir == "" {
		dir = vm.DefaultVMClockDir
	}
	f := vmclockFiles{
		qemu:   filepath.Join(dir, "qemu-system-x86_64"),
		kernel: filepath.Join(dir, "vmlinuz"),
		module: filepath.Join(dir, "ptp_vmclock.ko"),
	}
	for _, p := range []string{f.qemu, f.kernel, f.module} {
		if st, err := os.Stat(p); err != nil || st.Size() == 0 {
			testtool.Missing(t, fmt.Sprintf("%s not found; run scripts/test-deps.sh (42-vmclock.sh) to fetch qemu 10 and Linux 7.3.4", p))
		}
	}
	return f
}

func runLogged(t *testing.T, name string, args []string, env ...string) {
	t.Helper()
	cmd := exec.Command(name, args...)
	cmd.Env = append(os.Environ(), env...)
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("%s %s: %v\n%s", name, strings.Join(args, " "), err, out)
	}
}

// packCpio writes the newc cpio archive of dir to w.
func packCpio(t *testing.T, dir string, w io.Writer) {
	t.Helper()
	cmd := exec.Command("sh", "-c", "find . -print0 | cpio --null -o -H newc --quiet")
	cmd.Dir = dir
	cmd.Stdout = w
	var stderr strings.Builder
	cmd.Stderr = &stderr
	if err := cmd.Run(); err != nil {
		t.Fatalf("cpio of %s: %v\n%s", dir, err, stderr.String())
	}
}

func copyFile(t *testing.T, src, dst string, mode os.FileMode) {
	t.Helper()
	b, err := os.ReadFile(src)
	if err != nil {
		t.Fatal(err)
	}
	if err := os.MkdirAll(filepath.Dir(dst), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(dst, b, mode); err != nil {
		t.Fatal(err)
	}
}

// initrd returns the guest's initramfs: the cached Debian root followed by
// an archive with the .deb and the guest test script (the kernel unpacks
// concatenated archives in order).
func initrd(t *testing.T, vmclockModule string) string {
	t.Helper()
	script, err := os.ReadFile("mkroot.sh")
	if err != nil {
		t.Fatal(err)
	}
	// Named after the script that builds it: a changed package list builds
	// a new root.
	sum := sha256.Sum256(script)
	root := filepath.Join(cacheDir, fmt.Sprintf("systemd-root-%x.cpio", sum[:6]))
	start := time.Now()
	runLogged(t, "./mkroot.sh", []string{root})
	t.Logf("Debian root %s ready after %v", root, time.Since(start).Round(time.Second))

	dist := t.TempDir()
	runLogged(t, "../../scripts/package.sh", nil, "VERSION="+version, "ARCHS=amd64", "FORMATS=deb", "DIST="+dist)
	debs, _ := filepath.Glob(filepath.Join(dist, "clockwatch_*_amd64.deb"))
	if len(debs) != 1 {
		t.Fatalf("package.sh made %q, want one amd64 .deb", debs)
	}

	overlay := t.TempDir()
	copyFile(t, debs[0], filepath.Join(overlay, "root/clockwatch.deb"), 0o644)
	copyFile(t, "testdata/clockwatch-vmtest", filepath.Join(overlay, "usr/local/sbin/clockwatch-vmtest"), 0o755)
	copyFile(t, "testdata/clockwatch-vmtest-restarts", filepath.Join(overlay, "usr/local/sbin/clockwatch-vmtest-restarts"), 0o644)
	copyFile(t, "testdata/clockwatch-vmtest-vmclock", filepath.Join(overlay, "usr/local/sbin/clockwatch-vmtest-vmclock"), 0o644)
	// Not under /lib: in the root that is a symlink to usr/lib, which an
	// archive's directory entry would not go through.
	copyFile(t, vmclockModule, filepath.Join(overlay, "usr/local/lib/clockwatch-test/ptp_vmclock.ko"), 0o644)
	// The subscribers of the restart and memory checks. They step the
	// guest's clock only where this marker and clockwatch.testvm=1 both are.
	if err := os.MkdirAll(filepath.Join(overlay, "etc"), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(overlay, guest.MarkerFile), []byte("the systemd VM test's guest\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	runLogged(t, "go", []string{"build", "-trimpath", "-o", filepath.Join(overlay, "usr/local/sbin/cw-subscribers"), "./subscribers"}, "CGO_ENABLED=0")
	// The NTP server timesyncd synchronises to in the guest.
	runLogged(t, "go", []string{"build", "-trimpath", "-o", filepath.Join(overlay, "usr/local/sbin/cw-ntpserver"), "./ntpserver"}, "CGO_ENABLED=0")
	copyFile(t, "testdata/clockwatch-vmtest.service", filepath.Join(overlay, "etc/systemd/system/clockwatch-vmtest.service"), 0o644)
	// The guest script owns the serial console: with udev in the root,
	// ttyS0 shows up as a device and systemd starts a getty on it
	// (console=ttyS0), whose vhangup cut the script's reports off in the
	// first run. Masked.
	if err := os.Symlink("/dev/null", filepath.Join(overlay, "etc/systemd/system/serial-getty@ttyS0.service")); err != nil {
		t.Fatal(err)
	}
	wants := filepath.Join(overlay, "etc/systemd/system/multi-user.target.wants")
	if err := os.MkdirAll(wants, 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink("/etc/systemd/system/clockwatch-vmtest.service", filepath.Join(wants, "clockwatch-vmtest.service")); err != nil {
		t.Fatal(err)
	}

	path := filepath.Join(t.TempDir(), "initrd.cpio")
	f, err := os.Create(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	base, err := os.Open(root)
	if err != nil {
		t.Fatal(err)
	}
	defer base.Close()
	if _, err := io.Copy(f, base); err != nil {
		t.Fatal(err)
	}
	packCpio(t, overlay, f)
	return path
}

// boot runs the VM to the end of the guest script and returns its facts.
// machine is one boot's qemu, kernel and what they add to the defaults.
type machine struct {
	qemu, kernel string
	// qemuArgs come before the common ones; cmdline is appended to the
	// kernel's command line.
	qemuArgs []string
	cmdline  string
}

// reserve is the time the test needs after this boot (a later boot, the
// checks): the boot ends that long before go test's -timeout would, so that
// a slow run fails with the console's tail rather than a panic that leaves
// qemu running.
func boot(t *testing.T, m machine, initrd string, reserve time.Duration) map[string]string {
	t.Helper()
	budget := vmTimeout
	if deadline, ok := t.Deadline(); ok {
		budget = min(budget, time.Until(deadline)-reserve)
	}
	ctx, cancel := context.WithTimeout(t.Context(), budget)
	defer cancel()
	args := append(append([]string(nil), m.qemuArgs...),
		"-accel", "tcg", "-m", "2048", "-smp", "2",
		"-kernel", m.kernel, "-initrd", initrd,
		"-append", "console=ttyS0 no_timer_check clockwatch.testvm=1 rdinit=/lib/systemd/systemd panic=-1 loglevel=4 systemd.show_status=0"+m.cmdline,
		"-display", "none", "-serial", "stdio", "-monitor", "none", "-nic", "none", "-no-reboot",
	)
	cmd := exec.CommandContext(ctx, m.qemu, args...)
	// Never outlive the test, whatever ends it.
	cmd.SysProcAttr = &syscall.SysProcAttr{Pdeathsig: syscall.SIGKILL}
	out, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	cmd.Stderr = cmd.Stdout
	logPath := filepath.Join(t.TempDir(), "console.log")
	logf, err := os.Create(logPath)
	if err != nil {
		t.Fatal(err)
	}
	defer logf.Close()
	start := time.Now()
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	facts := map[string]string{}
	var console []string
	sc := bufio.NewScanner(io.TeeReader(out, logf))
	sc.Buffer(make([]byte, 1<<20), 1<<20)
	for sc.Scan() {
		line := strings.TrimRight(sc.Text(), "\r")
		console = append(console, line)
		if rest, ok := strings.CutPrefix(line, "CWTEST "); ok {
			k, v, _ := strings.Cut(rest, "=")
			facts[k] = v
			if k == "dpkg_rc" {
				t.Logf("dpkg -i in the guest after %v of VM time", time.Since(start).Round(time.Second))
			}
		}
	}
	werr := cmd.Wait()
	t.Logf("VM ran %v (exit: %v)", time.Since(start).Round(time.Second), werr)
	if facts["done"] != "1" {
		tail := console[max(0, len(console)-200):]
		t.Fatalf("the guest script did not finish within %v (%v); last console lines:\n%s", budget.Round(time.Second), errors.Join(werr, ctx.Err()), strings.Join(tail, "\n"))
	}
	for _, l := range console {
		if strings.HasPrefix(l, "journal: ") || strings.HasPrefix(l, "dpkg: ") || strings.HasPrefix(l, "socket: ") ||
			strings.HasPrefix(l, "tsd") || strings.HasPrefix(l, "ntpserver: ") || strings.HasPrefix(l, "restarts: ") ||
			strings.HasPrefix(l, "pid1: ") || strings.HasPrefix(l, "udevd: ") || strings.HasPrefix(l, "kernel: ") {
			t.Log(l)
		}
	}
	return facts
}

// TestPackageUnderSystemd installs the .deb in a VM whose PID 1 is systemd.
func TestPackageUnderSystemd(t *testing.T) {
	if os.Getenv(EnvVMTest) != "1" {
		t.Skipf("boots a Debian VM with systemd (several minutes; downloads Debian packages once): set %s=1 to run it", EnvVMTest)
	}
	if os.Geteuid() != 0 {
		testtool.Missing(t, "building the Debian root needs root (debootstrap, chroot)")
	}
	testtool.Require(t, "debootstrap")
	testtool.Require(t, "cpio")
	kernel := kernelPath()
	if _, err := os.Stat(kernel); err != nil {
		testtool.Missing(t, fmt.Sprintf("no kernel at %s (scripts/deps.d/40-vm.sh fetches it; or set CLOCKWATCH_TEST_KERNEL)", kernel))
	}
	files := vmclockPaths(t)
	img := initrd(t, files.module)

	// The VMClock boot after it takes 25 s quiet.
	first := machine{qemu: testtool.Require(t, "qemu-system-x86_64"), kernel: kernel}
	switch fault := os.Getenv(EnvFault); fault {
	case "":
	case "stall":
		first.cmdline = " clockwatch.fault=" + fault
		t.Logf("%s=%s: this run must fail", EnvFault, fault)
	default:
		t.Fatalf("%s=%q: the faults are: stall", EnvFault, fault)
	}
	facts := boot(t, first, img, 3*time.Minute)
	keys := make([]string, 0, len(facts))
	for k := range facts {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	for _, k := range keys {
		t.Logf("%s=%s", k, facts[k])
	}

	eq := func(key, want string) func() error {
		return func() error {
			if got := facts[key]; got != want {
				return fmt.Errorf("%s = %q, want %q", key, got, want)
			}
			return nil
		}
	}
	contains := func(key, want string) func() error {
		return func() error {
			if got := facts[key]; !strings.Contains(","+got+",", ","+want+",") {
				return fmt.Errorf("%s = %q, want it to list %q", key, got, want)
			}
			return nil
		}
	}
	within := func(key string, lo, hi float64) error {
		v, err := strconv.ParseFloat(facts[key], 64)
		if err != nil || v < lo || v > hi {
			return fmt.Errorf("%s = %q, want a number within [%g, %g]", key, facts[key], lo, hi)
		}
		return nil
	}
	// span checks that the time from fact from to fact to, both in seconds,
	// lies within [lo, hi].
	span := func(from, to string, lo, hi float64) error {
		a, errA := strconv.ParseFloat(facts[from], 64)
		b, errB := strconv.ParseFloat(facts[to], 64)
		if errA != nil || errB != nil || b-a < lo || b-a > hi {
			return fmt.Errorf("%s − %s = %q − %q, want a span within [%g, %g] s", to, from, facts[to], facts[from], lo, hi)
		}
		return nil
	}
	for _, c := range []struct {
		what  string
		check func() error
	}{
		{"systemd is PID 1 in the guest", eq("systemd_pid1", "systemd")},
		{"dpkg -i succeeds", eq("dpkg_rc", "0")},
		{"the postinst enabled the service", eq("is_enabled", "enabled")},
		{"the service is running (READY=1 received)", eq("active_state", "active")},
		{"the service's sub-state is running", eq("sub_state", "running")},
		{"the daemon sent a STATUS line", func() error {
			if facts["status_text"] == "" {
				return errors.New("StatusText is empty")
			}
			return nil
		}},
		{"the unit's watchdog is on", eq("watchdog_usec", "30s")},
		{"runs as clockwatch", eq("user", "clockwatch")},
		{"no effective capabilities", eq("cap_eff", "0000000000000000")},
		{"an empty bounding set", eq("cap_bnd", "0000000000000000")},
		{"a seccomp filter", eq("seccomp", "2")},
		{"no new privileges", eq("no_new_privs", "1")},
		{"systemd-analyze security rates the unit's exposure at most 2.0", func() error { return within("security_exposure", 0, 2.0) }},
		{"systemd-analyze security --threshold=20 passes", eq("security_rc", "0")},
		{"the postinst added the user to _chrony", contains("user_groups", "_chrony")},
		{"the daemon holds the _chrony group", contains("proc_groups", "_chrony")},
		{"chronyd runs in the guest", eq("chrony_active", "active")},
		{"clockwatch reads chronyd through its socket from inside the sandbox", func() error {
			if facts["chrony_up"] == "" {
				// Checked as soon as the daemon polls chronyd.
				t.Log("no clockwatch_chrony_up: the daemon does not poll chronyd (yet); chrony access not checked")
				return nil
			}
			return eq("chrony_up", "1")()
		}},
		{"clock reads work in the sandbox", eq("clock_up", "1")},
		{"the read-only adjtimex passes the system call filter", eq("kernel_up", "1")},
		{"the binary carries the package version", eq("build_version", version)},
		{"/run/clockwatch", eq("runtime_dir", "clockwatch:clockwatch:755")},
		{"/var/lib/clockwatch", eq("state_dir", "clockwatch:clockwatch:750")},
		{"/run/clockwatch/clockbound", eq("clockbound_dir", "clockwatch:clockwatch:755")},
		{"the clockbound segment's owner and mode", eq("clockbound_file", "regular file:clockwatch:clockwatch:644")},
		{"the clockbound segment is written from inside the sandbox", func() error {
			if n, err := strconv.ParseFloat(facts["clockbound_writes"], 64); err != nil || n < 1 {
				return fmt.Errorf("clockwatch_clockbound_writes_total %q, want at least 1", facts["clockbound_writes"])
			}
			return nil
		}},
		{"any user reads the segment (ClockBound's magic)", eq("clockbound_magic_as_nobody", "4e 5a 4d 41 00 02 42 43")},
		{"exposure at most 2.0 under the real systemd", func() error {
			e, err := strconv.ParseFloat(facts["exposure"], 64)
			if err != nil || e > 2.0 {
				return fmt.Errorf("exposure %q, want a number at most 2.0", facts["exposure"])
			}
			return nil
		}},
		{"still running past WatchdogSec", eq("active_after_watchdog", "active")},
		{"no watchdog restarts", eq("restarts_after_watchdog", "0")},
		{"the same process throughout", eq("pid_after_watchdog", "same")},
		{"the window was past WatchdogSec (30 s) by 5 s", func() error { return within("watchdog_window_s", 35, math.Inf(1)) }},
		{"systemctl reload succeeds", eq("reload_rc", "0")},
		{"still running after the reload", eq("active_after_reload", "active")},
		{"clockwatch.socket listens", eq("socket_active", "active")},
		{"the stepdown socket's owner and mode", eq("socket_file", "socket:root:clockwatch:660")},
		{"the service starts with the socket unit active", eq("active_with_socket", "active")},
		{"socket activation passes the stepdown socket by name", eq("listen_fd_names", "stepdown")},
		{"an absent timesyncd: found 0", eq("tsd_absent_found", "0")},
		{"an absent timesyncd: up 0", eq("tsd_absent_up", "0")},
		{"an absent timesyncd is no failure", eq("tsd_absent_failures", "0")},
		{"an absent timesyncd: only up, found and the poll counters", eq("tsd_absent_series", "4")},
		{"systemd-timesyncd installs", eq("tsd_dpkg_rc", "0")},
		{"systemd-timesyncd runs", eq("tsd_active", "active")},
		{"timesyncd owns its bus name", eq("tsd_owned", "yes")},
		{"clockwatch finds timesyncd on the system bus", eq("tsd_found", "1")},
		{"clockwatch reads timesyncd from inside its sandbox", eq("tsd_up", "1")},
		{"timesyncd synchronised to the test server", eq("tsd_synchronized", "1")},
		{"no failed reads of timesyncd", eq("tsd_failures", "0")},
		{"timesyncd's server", eq("tsd_server_info", `ref_id="TEST",server_address="127.0.0.1",server_name="127.0.0.1"`)},
		{"the server's stratum", eq("tsd_stratum", "1")},
		{"timesyncd's poll interval", eq("tsd_poll_interval", "16")},
		{"the offset's sign: the server runs 100 ms ahead, so this clock is behind", func() error {
			// The first samples see about −100 ms; timesyncd then slews it
			// away (it is read at the first synchronised scrape).
			return within("tsd_sample_offset", -0.15, 0.01)
		}},
		{"the error bound covers the offset", func() error {
			off, _ := strconv.ParseFloat(facts["tsd_sample_offset"], 64)
			return within("tsd_error_bound", math.Abs(off), 0.2)
		}},
		{"synchronisation is lost once the server stops answering", eq("tsd_lost_synchronized", "0")},
		{"timesyncd still answers on the bus", eq("tsd_lost_up", "1")},
		{"lost after 2 polls + 15 s, not before", func() error {
			// The reply ages out 47 s after it came; the server stopped
			// up to one poll (16 s) after it.
			return within("tsd_lost_sample_age", 47, 60)
		}},
		// Restarts with 500 subscribers under clockwatch.socket (issue 25, item 4).
		{"before the step the state is ok (the hold-down is what will hold the stepdown)", eq("rs_state_before", "ok")},
		{"the soft limit on open files is raised past max_clients", func() error { return within("rs_nofile", 4096+64, math.Inf(1)) }},
		{"the load program ran its steps", eq("rs_load_rc", "0")},
		{"every step of the load completed in time", eq("rs_steps_failed", "0")},
		{"500 subscribers connect", eq("rs_hello_clients", "500")},
		{"all 500 hear ok first", eq("rs_hello_states", "ok/:500")},
		{"the step in the guest is made", eq("rs_step_rc", "0")},
		{"the clock stepped by +5 s", func() error { return within("rs_step_applied_ms", 4950, 5050) }},
		{"all 500 hear the step's stepdown", eq("rs_step_stepdown_clients", "500")},
		{"the stepdown's reason is step", eq("rs_step_stepdown_reasons", "step:500")},
		{"the drill before the step is asked for", eq("rs_drill_sent", "true")},
		{"all 500 hear the drill's stepdown and resume", eq("rs_drill_clients", "500")},
		{"the step's stepdown reaches all 500 about as fast as the drill's did in this run (at most twice its slowest, plus 1.5 s)", func() error {
			// From the stepdown's mono_ns to each client's receipt, against
			// the same for the drill just before: the guest's speed (host
			// load) sets both. The step also wakes every timer the guest's
			// processes set on CLOCK_REALTIME (systemd's among them), which
			// the drill does not: at host load 4 the step's slowest took
			// 867 ms against the drill's 105 ms (2×+0.5 s failed, the daemon
			// had seen the step in 8 ms); it was 0.1–2.2 s after the clock
			// change at host load 20–24. A daemon that sees the step late
			// fails the check below; one that delivers it late, this one.
			d, errD := strconv.ParseFloat(facts["rs_drill_delivery_max_ms"], 64)
			if errD != nil {
				return fmt.Errorf("rs_drill_delivery_max_ms = %q", facts["rs_drill_delivery_max_ms"])
			}
			return within("rs_step_stepdown_delivery_max_ms", 0, 2*d+1500)
		}},
		// Judged from the system call that stepped the clock (the mark),
		// with the stepdown's mono_ns (CLOCK_MONOTONIC when the daemon saw
		// the step) and its seq.
		{"the daemon saw the step after the clock changed, never before", eq("rs_step_stepdown_seen_early", "0")},
		{"the daemon saw the step within 1 s of the clock change", func() error {
			// A mark (timerfd) plus one sample: µs on an idle machine; the
			// sampling backstop is 100 ms (docs/step-detection.md).
			// 1.5 ms at host load 24.
			return within("rs_step_stepdown_seen_max_ms", 0, 1000)
		}},
		{"no ok composed after the stepdown reached anyone before it (an ok heard then carries an older seq)", eq("rs_step_stepdown_ok_late", "0")},
		{"systemctl restart succeeds during the hold-down", eq("rs_restart_rc", "0")},
		{"the restart, stop and start, is over within the hold-down, 5 s before its end (else the restored hold-down is not tested)", func() error {
			a, errA := strconv.ParseFloat(facts["rs_step_mark_mono_s"], 64)
			b, errB := strconv.ParseFloat(facts["rs_restart_mark_mono_s"], 64)
			run, errR := strconv.ParseFloat(facts["rs_restart_run_ms"], 64)
			if errA != nil || errB != nil || errR != nil || b+run/1000-a > 25 {
				return fmt.Errorf("step at %q s, restart at %q s for %q ms: want it over 25 s after the step at most", facts["rs_step_mark_mono_s"], facts["rs_restart_mark_mono_s"], facts["rs_restart_run_ms"])
			}
			return nil
		}},
		{"the restart disconnects all 500", eq("rs_restart_disconnected", "500")},
		{"all 500 reconnect after the restart", eq("rs_restart_reconnected", "500")},
		{"no connection is refused across the restart", eq("rs_restart_refused", "0")},
		{"no connect fails at all across the restart (systemd holds the socket)", eq("rs_restart_connect_errors", "0")},
		{"every first hello after the restart says stepdown, reason step", eq("rs_restart_first_hello", "stepdown/step:500")},
		{"all 500 hear the resume once the hold-down is over", eq("rs_step_resume_clients", "500")},
		{"the resume ends the step", eq("rs_step_resume_reasons", "step:500")},
		{"nobody hears ok between its stepdown and the resume (hellos across the restart and heartbeats)", eq("rs_step_resume_ok_held", "0")},
		{"the restart did not shorten the hold-down (30 s from the step)", func() error { return within("rs_step_resume_min_ms", 30000, 45000) }},
		{"the last resume is heard within 30 s of the hold-down's end", func() error {
			// Receipts: 42.96 s at host load 20, clients that had to
			// reconnect among them; the daemon's own account is below.
			return within("rs_step_resume_max_ms", 30000, 60000)
		}},
		{"by the daemon's own account the hold-down lasted 30 s, across the restart (resume's mono_ns less the stepdown's)", func() error {
			// The resume's mono_ns is the hold-down timer's firing: 5 ms
			// late at host load 24, 469 ms at load 20.
			return within("rs_step_resume_held_min_ms", 30000, 32000)
		}},
		{"and no longer for anyone", func() error { return within("rs_step_resume_held_max_ms", 30000, 32000) }},
		{"reconnecting all 500 after the restart took a measured time", func() error { return within("rs_restart_all_ms", 1, 60000) }},
		// The watchdog: SIGSTOP, WatchdogSec=30s, Restart=on-failure.
		{"the daemon is stopped with SIGSTOP", eq("rs_stop_rc", "0")},
		{"systemd's watchdog fails it", eq("rs_watchdog_results", "1")},
		{"and restarts it, once", eq("rs_nrestarts", "1")},
		{"a new process runs after the watchdog", eq("rs_pid_changed", "yes")},
		{"the restarted service is active", eq("rs_active_after", "active")},
		{"the watchdog's kill disconnects all 500", eq("rs_stop_disconnected", "500")},
		{"all 500 reconnect after the watchdog restart", eq("rs_stop_reconnected", "500")},
		{"no connection is refused while the daemon is stopped or restarted", eq("rs_stop_refused", "0")},
		// Judged by parts, by the guest's CLOCK_MONOTONIC (systemd's journal
		// and cw-subscribers share it): the SIGABRT's dump and the restart
		// take what the host's speed gives them (60 s under host load 24).
		{"the watchdog fires 15–30 s after the SIGSTOP (pings every WatchdogSec/2)", func() error {
			return span("rs_stop_mark_mono_s", "rs_watchdog_timeout_mono_s", 14, 40)
		}},
		// Go's runtime answers SIGABRT with "SIGABRT: abort", a dump of
		// every goroutine and exit status 2; the dump takes 60–91 s at host
		// load 20–24, so the test's TimeoutAbortSec=20s may SIGKILL it
		// first. A daemon that caught or ignored the signal would print no
		// such line.
		{"the stopped daemon takes the watchdog's SIGABRT (the Go runtime's dump begins)", func() error { return within("rs_watchdog_sigabrt", 1, 1) }},
		{"and dies of it, or of the SIGKILL while it dumps", func() error {
			switch facts["rs_watchdog_exit"] {
			case "code=exited,status=2/INVALIDARGUMENT", "code=killed,status=9/KILL":
				return nil
			}
			return fmt.Errorf("rs_watchdog_exit = %q, want Go's exit 2 or the SIGKILL after TimeoutAbortSec", facts["rs_watchdog_exit"])
		}},
		{"all 500 are back within 120 s of the new process's start", func() error {
			// The clients' backoff is at most 5 s, but the socket's backlog
			// then holds the connections they gave up on while the daemon
			// was stopped, which the new process accepts and greets first:
			// 44 s at host load 20.
			return span("rs_stop_started_mono_s", "rs_stop_all_mono_s", 0, 120)
		}},
		{"the first hellos after the watchdog restart are truthful (the hold-down is over: starting or ok)", func() error {
			for _, kv := range strings.Split(facts["rs_stop_first_hello"], ",") {
				if k, _, _ := strings.Cut(kv, ":"); k != "unknown/starting" && k != "ok/" {
					return fmt.Errorf("rs_stop_first_hello = %q", facts["rs_stop_first_hello"])
				}
			}
			return nil
		}},
		{"no connection refused in the whole run", eq("rs_refused_total", "0")},
		// memory.max at the DaemonSet's limit with 5,000 subscribers (item 6).
		{"memory.max is the DaemonSet's 64 Mi", eq("mem_max", "67108864")},
		{"GOMEMLIMIT is the DaemonSet's", eq("mem_gomemlimit", "48MiB")},
		{"the state is ok before the load (drills need it)", eq("mem_state_before", "ok")},
		{"max_clients subscribers connected", eq("mem_subscribers", "4096")},
		// The guest's own size first: a kill outside the daemon's cgroup
		// is the harness's fault, and the checks after it judge nothing.
		{"the guest never ran out of memory (the harness's sizing, not the daemon: kernel: lines)", eq("mem_oom_guest", "0")},
		{"the daemon never met its memory.max (kernel's CONSTRAINT_MEMCG)", eq("mem_oom_daemon_memcg", "0")},
		{"nothing is OOM-killed (memory.events)", eq("mem_oom_kill", "0")},
		{"the kernel logs no OOM", eq("mem_kernel_oom", "0")},
		{"the daemon is the same process after the load", eq("mem_same_pid", "yes")},
		{"no restarts under the load", eq("mem_nrestarts", "0")},
		{"the daemon is active after the load", eq("mem_active", "active")},
		{"the scrape flood is served", func() error { return within("mem_scrape_scrapes", 1, math.Inf(1)) }},
		{"no scrape fails", eq("mem_scrape_errors", "")},
		{"root asks for the drill", eq("mem_root_drill_sent", "true")},
		{"the memory peak is measured", func() error { return within("mem_peak", 1, 128<<20) }},
		// No VMClock device (Debian's 6.1 kernel has no driver): the unit
		// starts clean, PID 1 logs no warning about it, no vmclock series.
		{"no VMClock device in this boot", eq("vmclock_absent_at_boot", "yes")},
		{"without the device PID 1 logs no warning about clockwatch (no \"Couldn't stat device\")", eq("vmclock_nodevice_pid1_warnings", "0")},
		{"without the device no vmclock series (mode auto)", eq("vmclock_nodevice_series", "0")},
		{"systemctl stop succeeds", eq("stop_rc", "0")},
		{"a clean stop", eq("stopped_result", "success")},
		{"dpkg --purge succeeds", eq("purge_rc", "0")},
		{"nothing left after the purge", eq("leftovers", "")},
		{"the system user stays after the purge, as Debian keeps system users", func() error {
			if !strings.HasPrefix(facts["user_after_purge"], "clockwatch:") {
				return fmt.Errorf("user_after_purge = %q, want the clockwatch passwd entry", facts["user_after_purge"])
			}
			return nil
		}},
	} {
		if err := c.check(); err != nil {
			t.Errorf("%s: %v", c.what, err)
		}
	}
	checkAdmission(t, facts)

	t.Run("VMClock", func(t *testing.T) {
		facts := boot(t, machine{
			qemu: files.qemu, kernel: files.kernel,
			// The unpacked qemu 10 looks for its firmware where its own
			// package would have put it; the host's qemu-system-data has
			// what a pc needs.
			qemuArgs: []string{"-L", "/usr/share/qemu", "-device", "vmclock"},
			cmdline:  " clockwatch.vmclock=1",
		}, img, 10*time.Second)
		checkVMClock(t, facts)
	})
}

// checkVMClock judges the VMClock boot (testdata/clockwatch-vmtest-vmclock):
// the device under the packaged unit.
func checkVMClock(t *testing.T, facts map[string]string) {
	t.Helper()
	keys := make([]string, 0, len(facts))
	for k := range facts {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	for _, k := range keys {
		t.Logf("%s=%s", k, facts[k])
	}
	eq := func(key, want string) func() error {
		return func() error {
			if got := facts[key]; got != want {
				return fmt.Errorf("%s = %q, want %q", key, got, want)
			}
			return nil
		}
	}
	for _, c := range []struct {
		what  string
		check func() error
	}{
		{"systemd is PID 1 in the guest", eq("systemd_pid1", "systemd")},
		{"dpkg -i succeeds", eq("dpkg_rc", "0")},
		{"the service is running", eq("active_state", "active")},
		{"no VMClock device before the driver is loaded", eq("vmclock_absent_at_boot", "yes")},
		{"ptp_vmclock loads", eq("vmclock_insmod_rc", "0")},
		{"before the package, the device is root-only", eq("vmclock_dev_before_install", "character special file:root:root:600")},
		{"it is qemu's VMClock page", eq("vmclock_magic", "VCLK")},
		{"the package installs the udev rule", eq("vmclock_rules_file", "regular file:root:root:644")},
		{"the postinst applied it to the existing device", eq("vmclock_dev", "character special file:root:clockwatch:640")},
		{"the clockwatch user reads the device", eq("vmclock_read_as_clockwatch", "VCLK")},
		{"other users do not", eq("vmclock_read_as_nobody", "denied")},
		{"the device is in the service's private /dev", eq("vmclock_dev_in_sandbox", "character special file:root:clockwatch:640")},
		{"clockwatch reads the page from inside the sandbox at its first start", eq("vmclock_up", "1")},
		{"no failed reads of the page", eq("vmclock_failures", "0")},
		{"qemu's marker", func() error {
			if n, err := strconv.ParseFloat(facts["vmclock_marker"], 64); err != nil || n < 1 {
				return fmt.Errorf("clockwatch_vmclock_disruption_marker %q, want at least 1", facts["vmclock_marker"])
			}
			return nil
		}},
		{"PID 1 logs no warning about clockwatch or its device", eq("vmclock_pid1_warnings", "0")},
		{"udevd logs no warning about the rule", eq("vmclock_udevd_warnings", "0")},
		{"ptp_vmclock unloads", eq("vmclock_rmmod_rc", "0")},
		{"the device is gone", eq("vmclock_gone", "yes")},
		{"without the device the unit starts", eq("vmclock_absent_active", "active")},
		{"without the device no vmclock series (mode auto)", eq("vmclock_absent_series", "0")},
		{"without the device the clocks are read", eq("vmclock_absent_clock_up", "1")},
		{"without the device PID 1 logs no warning at the start (no \"Couldn't stat device\")", eq("vmclock_absent_pid1_warnings", "0")},
		{"ptp_vmclock loads again", eq("vmclock_reinsmod_rc", "0")},
		{"udev's add applies the rule by itself", eq("vmclock_dev_readded", "character special file:root:clockwatch:640")},
		{"the restarted service is active", eq("vmclock_readded_active", "active")},
		{"and reads the device", eq("vmclock_readded_up", "1")},
		{"no warning from PID 1 at that restart", eq("vmclock_readded_pid1_warnings", "0")},
		{"the private /dev holds no misc node but the page (what char-misc r opens)", eq("vmclock_sandbox_dev_list", "full,null,ptmx,random,tty,urandom,vmclock0,zero,")},
		{"a DeviceAllow= path that does not exist does not fail a unit (systemd 252)", eq("devallow_probe_rc", "0")},
	} {
		if err := c.check(); err != nil {
			t.Errorf("%s: %v", c.what, err)
		}
	}
	// Why the unit names char-misc: systemd 252 warns about a missing
	// DeviceAllow= path at every start. Recorded, not required (a newer
	// systemd may skip it quietly).
	t.Logf("PID 1 warned %s time(s) about the probe unit's DeviceAllow=/dev/vmclock-absent", facts["devallow_probe_warnings"])
}

// checkAdmission judges the memory load's admission (clockwatch-vmtest-restarts):
// five uids in the clockwatch group one after another, then root, against
// max_clients 4096, its reserve of 64 for root and 1024 per uid.
func checkAdmission(t *testing.T, facts map[string]string) {
	t.Helper()
	admittedTotal, drilled := 0, 0
	for _, h := range []struct {
		prefix                                string
		admitted, perUID, reserve, maxClients int
	}{
		{"mem_u1", 1024, 176, 0, 0}, // tries 1200: the per-uid cap
		{"mem_u2", 1000, 0, 0, 0},
		{"mem_u3", 1000, 0, 0, 0},
		{"mem_u4", 1000, 0, 0, 0},
		{"mem_u5", 8, 0, 792, 0},  // 4032 taken: the rest is root's reserve
		{"mem_root", 64, 0, 0, 1}, // the reserve, then max_clients
	} {
		for key, want := range map[string]int{
			"admitted": h.admitted, "refused_per_uid": h.perUID, "refused_reserve": h.reserve,
			"refused_max_clients": h.maxClients, "refused_other": 0,
			// Every admitted subscriber hears the drill's stepdown and resume,
			// under the flood, and none is lost.
			"drill_stepdowns": h.admitted, "drill_resumes": h.admitted, "lost": 0,
		} {
			if got := facts[h.prefix+"_"+key]; got != strconv.Itoa(want) {
				t.Errorf("admission: %s_%s = %q, want %d", h.prefix, key, got, want)
			}
		}
		for _, key := range []string{"refused_unexplained", "connect_errors"} {
			if got := facts[h.prefix+"_"+key]; got != "" {
				t.Errorf("admission: %s_%s = %q, want none", h.prefix, key, got)
			}
		}
		n, _ := strconv.Atoi(facts[h.prefix+"_admitted"])
		d, _ := strconv.Atoi(facts[h.prefix+"_drill_stepdowns"])
		admittedTotal += n
		drilled += d
	}
	t.Logf("admission: %d admitted, %d heard the drill", admittedTotal, drilled)
}
