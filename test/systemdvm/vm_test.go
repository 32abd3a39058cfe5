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
	"testing"
	"time"

	"github.com/clockwatch/clockwatch/internal/testtool"
)

// EnvVMTest opts in to this test.
const EnvVMTest = "CLOCKWATCH_SYSTEMD_VM_TEST"

const (
	cacheDir = "/var/cache/clockwatch-test"
	version  = "1.0.0"
	// vmTimeout bounds the whole boot, install and checks; the guest script
	// alone waits up to ~3 minutes when the service never becomes ready.
	vmTimeout = 14 * time.Minute
)

func kernelPath() string {
	if k := os.Getenv("CLOCKWATCH_TEST_KERNEL"); k != "" {
		return k
	}
	return filepath.Join(cacheDir, "vmlinuz")
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
func initrd(t *testing.T) string {
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
	// The NTP server timesyncd synchronises to in the guest.
	runLogged(t, "go", []string{"build", "-trimpath", "-o", filepath.Join(overlay, "usr/local/sbin/cw-ntpserver"), "./ntpserver"}, "CGO_ENABLED=0")
	copyFile(t, "testdata/clockwatch-vmtest.service", filepath.Join(overlay, "etc/systemd/system/clockwatch-vmtest.service"), 0o644)
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
func boot(t *testing.T, kernel, initrd string) map[string]string {
	t.Helper()
	qemu := testtool.Require(t, "qemu-system-x86_64")
	ctx, cancel := context.WithTimeout(t.Context(), vmTimeout)
	defer cancel()
	cmd := exec.CommandContext(ctx, qemu,
		"-accel", "tcg", "-m", "2048", "-smp", "2",
		"-kernel", kernel, "-initrd", initrd,
		"-append", "console=ttyS0 rdinit=/lib/systemd/systemd panic=-1 loglevel=4 systemd.show_status=0",
		"-display", "none", "-serial", "stdio", "-monitor", "none", "-nic", "none", "-no-reboot",
	)
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
		t.Fatalf("the guest script did not finish (%v); last console lines:\n%s", errors.Join(werr, ctx.Err()), strings.Join(tail, "\n"))
	}
	for _, l := range console {
		if strings.HasPrefix(l, "journal: ") || strings.HasPrefix(l, "dpkg: ") || strings.HasPrefix(l, "socket: ") ||
			strings.HasPrefix(l, "tsd") || strings.HasPrefix(l, "ntpserver: ") {
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

	facts := boot(t, kernel, initrd(t))
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
}
