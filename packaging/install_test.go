package packaging_test

import (
	"fmt"
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/clockwatch/clockwatch/internal/testtool"
	"github.com/clockwatch/clockwatch/internal/throwawayroot"
)

// EnvPackageTest opts in to the package test: it builds the packages (slow)
// and installs them in a throwaway root, never on this machine itself.
const EnvPackageTest = "CLOCKWATCH_PACKAGE_TEST"

const (
	oldVersion = "0.9.0"
	newVersion = "1.0.0"
	configPath = "/etc/clockwatch/clockwatch.yml"
)

// run runs a command and returns its combined output, failing the test when
// it does not exit 0.
func run(t *testing.T, name string, args ...string) string {
	t.Helper()
	out, err := exec.Command(name, args...).CombinedOutput()
	if err != nil {
		t.Fatalf("%s %s: %v\n%s", name, strings.Join(args, " "), err, out)
	}
	return string(out)
}

// dpkg runs dpkg, waiting while another process (apt-get in a parallel test
// setup) holds its lock, and returns how long the successful run took.
func dpkg(t *testing.T, args ...string) time.Duration {
	t.Helper()
	deadline := time.Now().Add(3 * time.Minute)
	for {
		start := time.Now()
		cmd := exec.Command("dpkg", args...)
		cmd.Stdin = nil // no terminal: dpkg must not need to ask anything
		cmd.Env = append(os.Environ(), "DEBIAN_FRONTEND=noninteractive")
		out, err := cmd.CombinedOutput()
		took := time.Since(start)
		if err == nil {
			t.Logf("dpkg %s (%v):\n%s", strings.Join(args, " "), took.Round(time.Millisecond), out)
			return took
		}
		if strings.Contains(string(out), "lock") && time.Now().Before(deadline) {
			time.Sleep(time.Second) // waiting for another dpkg, not for a condition of ours
			continue
		}
		t.Fatalf("dpkg %s: %v\n%s", strings.Join(args, " "), err, out)
	}
}

// packageStatus is dpkg's status of the clockwatch package, "" when dpkg
// does not know it.
func packageStatus() string {
	out, err := exec.Command("dpkg-query", "-W", "-f=${db:Status-Abbrev}", "clockwatch").Output()
	if err != nil {
		return ""
	}
	return strings.TrimSpace(string(out))
}

func exists(path string) bool {
	_, err := os.Lstat(path)
	return err == nil
}

func getent(db, key string) (string, bool) {
	out, err := exec.Command("getent", db, key).Output()
	return strings.TrimSpace(string(out)), err == nil
}

// build builds the amd64 packages of this tree in the given formats,
// stamped with version, into a temporary directory and returns the path of
// each, by format.
func build(t *testing.T, version string, formats ...string) map[string]string {
	t.Helper()
	dist := t.TempDir()
	cmd := exec.Command("../scripts/package.sh")
	cmd.Env = append(os.Environ(), "VERSION="+version, "ARCHS=amd64", "FORMATS="+strings.Join(formats, " "), "DIST="+dist)
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("scripts/package.sh (VERSION=%s): %v\n%s", version, err, out)
	}
	pkgs := map[string]string{}
	for format, glob := range map[string]string{"deb": "clockwatch_*_amd64.deb", "rpm": "clockwatch-*.x86_64.rpm"} {
		if !slices.Contains(formats, format) {
			continue
		}
		m, _ := filepath.Glob(filepath.Join(dist, glob))
		if len(m) != 1 {
			t.Fatalf("scripts/package.sh made %q, want one %s", m, glob)
		}
		pkgs[format] = m[0]
	}
	return pkgs
}

// checkRPM queries the .rpm built alongside the .deb: the same files, the
// configuration as %config(noreplace), the scriptlets and the dependency
// on the user tools. No RPM system here to install it on.
func checkRPM(t *testing.T, rpmPath string) {
	rpm := testtool.Require(t, "rpm")
	query := func(args ...string) string {
		t.Helper()
		return run(t, rpm, append([]string{"-qp", "--nosignature", "--nodigest"}, append(args, rpmPath)...)...)
	}
	if got := strings.TrimSpace(query("--qf", "%{NAME} %{VERSION} %{ARCH}")); got != "clockwatch "+newVersion+" x86_64" {
		t.Errorf("rpm name, version, arch: %q", got)
	}
	files := query("--qf", "[%{FILEMODES:perms} %{FILEFLAGS:fflags} %{FILENAMES}\n]")
	for _, want := range []string{
		"-rwxr-xr-x  /usr/bin/clockwatch",
		"-rw-r--r--  /usr/lib/systemd/system/clockwatch.service",
		"-rw-r--r--  /usr/lib/systemd/system/clockwatch.socket",
		"-rw-r--r--  /usr/lib/udev/rules.d/60-clockwatch-vmclock.rules",
		"-rw-r--r-- cn /etc/clockwatch/clockwatch.yml",
		"-rw-r--r-- d /usr/share/doc/clockwatch/README.md",
		"-rw-r--r-- d /usr/share/man/man1/clockwatch.1.gz",
		"-rw-r--r-- l /usr/share/licenses/clockwatch/copyright",
	} {
		if !strings.Contains(files, want+"\n") {
			t.Errorf("the rpm lacks %q; it has:\n%s", want, files)
		}
	}
	scripts := query("--scripts")
	for _, want := range []string{"postinstall scriptlet", "preuninstall scriptlet", "postuninstall scriptlet", "usermod -a -G", "[ -d /run/systemd/system ]"} {
		if !strings.Contains(scripts, want) {
			t.Errorf("the rpm's scriptlets lack %q:\n%s", want, scripts)
		}
	}
	if req := query("--requires"); !strings.Contains(req, "shadow-utils") {
		t.Errorf("the rpm does not require shadow-utils:\n%s", req)
	}
}

// TestDebInstallUpgradePurge builds an older and a newer .deb, then, in a
// throwaway copy of this machine's root (internal/throwawayroot), installs
// the older one, checks what it put on the machine, upgrades to the newer one
// over an edited configuration, removes and purges it, and checks what is
// left. Afterwards it checks that the host's dpkg database, users and
// clockwatch's directories are as they were before.
func TestDebInstallUpgradePurge(t *testing.T) {
	if inside := os.Getenv(envInside); inside != "" {
		installUpgradePurge(t, inside)
		return
	}
	if os.Getenv(EnvPackageTest) != "1" {
		t.Skipf("builds packages and installs them in a throwaway root: set %s=1 (make test does) to run it", EnvPackageTest)
	}
	if os.Geteuid() != 0 {
		testtool.Missing(t, "the package test mounts a throwaway root and installs with dpkg: it must run as root")
	}
	testtool.Require(t, "dpkg")
	testtool.Require(t, "systemd-analyze")
	before, err := throwawayroot.TakeHost()
	if err != nil {
		t.Fatal(err)
	}

	oldDeb := build(t, oldVersion, "deb")["deb"]
	newPkgs := build(t, newVersion, "deb", "rpm")
	t.Run("rpm", func(t *testing.T) { checkRPM(t, newPkgs["rpm"]) })
	// lintian takes about 40 s: it runs while the root installs.
	lintian := testtool.Require(t, "lintian")
	testtool.Require(t, "rpmlint")
	testtool.Require(t, "cpio")
	type lint struct{ name, problems, log string }
	lints := make(chan lint, 2)
	go func() {
		p, l := lintDeb(lintian, newPkgs["deb"])
		lints <- lint{"lintian", p, l}
	}()
	go func() {
		p, l := lintRPM(newPkgs["rpm"])
		lints <- lint{"rpmlint", p, l}
	}()
	defer func() {
		for range 2 {
			l := <-lints
			t.Logf("%s:\n%s", l.name, l.log)
			if l.problems != "" {
				t.Error(l.problems)
			}
		}
	}()

	self, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	cmd := throwawayroot.Command(exec.Command(self, "-test.run=^TestDebInstallUpgradePurge$", "-test.v", "-test.count=1", "-test.timeout=10m"))
	cmd.Env = append(os.Environ(), envInside+"="+strings.Join([]string{t.TempDir(), oldDeb, newPkgs["deb"]}, string(os.PathListSeparator)))
	out, err := cmd.CombinedOutput()
	t.Logf("in the throwaway root:\n%s", out)
	if err != nil {
		t.Errorf("the install, upgrade and purge in the throwaway root failed (%v): see its output above", err)
	}

	after, err := throwawayroot.TakeHost()
	if err != nil {
		t.Fatal(err)
	}
	for _, d := range before.Diff(after) {
		t.Errorf("the package test changed the host: %s", d)
	}
}

// envInside tells the test binary, started again by the test above in a mount
// namespace of its own, to enter the throwaway root and install there. Its
// value: the scratch directory for the root, the older and the newer .deb,
// separated by the path list separator.
const envInside = "CLOCKWATCH_PACKAGE_TEST_INSIDE"

// installUpgradePurge is the part of the package test that runs inside the
// throwaway root.
func installUpgradePurge(t *testing.T, inside string) {
	args := strings.Split(inside, string(os.PathListSeparator))
	if len(args) != 3 {
		t.Fatalf("%s=%q: want scratch, old .deb and new .deb", envInside, inside)
	}
	scratch := args[0]
	// What the checks compare with lives in this tree, which the root does
	// not show: read it first, with the packages.
	packagedConfig, err := os.ReadFile("clockwatch.yml")
	if err != nil {
		t.Fatal(err)
	}
	shipped := map[string][]string{}
	for _, g := range []struct{ glob, dir string }{
		{"../alerts/*.yml", "/usr/share/clockwatch/alerts"},
		{"../dashboards/*.json", "/usr/share/clockwatch/dashboards"},
		{"../docs/*.md", "/usr/share/doc/clockwatch/docs"},
	} {
		srcs, _ := filepath.Glob(g.glob)
		for _, src := range srcs {
			shipped[g.dir] = append(shipped[g.dir], filepath.Base(src))
		}
	}
	debs := map[string][]byte{}
	for _, p := range args[1:] {
		b, err := os.ReadFile(p)
		if err != nil {
			t.Fatal(err)
		}
		debs[filepath.Base(p)] = b
	}
	if err := throwawayroot.Enter(scratch); err != nil {
		t.Fatal(err)
	}
	for name, b := range debs {
		if err := os.WriteFile(filepath.Join("/tmp", name), b, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	oldDeb, newDeb := filepath.Join("/tmp", filepath.Base(args[1])), filepath.Join("/tmp", filepath.Base(args[2]))

	// The root is a copy of the host: what is true of one is true of the other.
	if st := packageStatus(); st != "" && !strings.HasPrefix(st, "un") {
		t.Fatalf("clockwatch is already known to dpkg here (%q): the test needs a host without it", st)
	}
	for _, db := range []string{"passwd", "group"} {
		if entry, ok := getent(db, "clockwatch"); ok {
			t.Fatalf("a clockwatch %s entry exists without the package (%s): the test needs a host without it", db, entry)
		}
	}
	analyze := testtool.Require(t, "systemd-analyze")
	if err := throwawayroot.Inside(); err != nil {
		t.Fatal(err)
	}
	// man-db rebuilds its index for the package's manual page only where
	// /var/lib/man-db/auto-update exists: not in this throwaway root (as in
	// many image builds), which saves about 14 s a dpkg run.
	if err := os.Remove("/var/lib/man-db/auto-update"); err != nil && !os.IsNotExist(err) {
		t.Fatal(err)
	}

	took := dpkg(t, "-i", oldDeb)
	t.Logf("dpkg -i of %s took %v", filepath.Base(oldDeb), took.Round(time.Millisecond))
	if st := packageStatus(); st != "ii" {
		t.Fatalf("after dpkg -i: status %q, want ii", st)
	}

	t.Run("files", func(t *testing.T) {
		for _, f := range []struct {
			path string
			mode fs.FileMode
		}{
			{"/usr/bin/clockwatch", 0o755},
			{"/usr/lib/systemd/system/clockwatch.service", 0o644},
			{"/usr/lib/systemd/system/clockwatch.socket", 0o644},
			{"/usr/lib/udev/rules.d/60-clockwatch-vmclock.rules", 0o644},
			{configPath, 0o644},
			{"/usr/share/doc/clockwatch/README.md", 0o644},
			{"/usr/share/doc/clockwatch/copyright", 0o644},
			{"/usr/share/clockwatch/alerts", fs.ModeDir | 0o755},
			{"/usr/share/clockwatch/dashboards", fs.ModeDir | 0o755},
		} {
			st, err := os.Stat(f.path)
			if err != nil {
				t.Errorf("%s: %v", f.path, err)
				continue
			}
			if st.Mode() != f.mode {
				t.Errorf("%s: mode %v, want %v", f.path, st.Mode(), f.mode)
			}
		}
		// Whatever alert rules, dashboards and docs the tree has ship.
		for dir, names := range shipped {
			for _, name := range names {
				if p := filepath.Join(dir, name); !exists(p) {
					t.Errorf("%s is not installed as %s", name, p)
				}
			}
		}
		if got, err := os.ReadFile(configPath); err != nil || string(got) != string(packagedConfig) {
			t.Errorf("%s differs from packaging/clockwatch.yml (err %v)", configPath, err)
		}
		if conffiles := run(t, "dpkg-query", "-W", "-f=${Conffiles}", "clockwatch"); !strings.Contains(conffiles, configPath) {
			t.Errorf("%s is not a conffile; dpkg lists: %q", configPath, conffiles)
		}
	})

	t.Run("user", func(t *testing.T) {
		pw, ok := getent("passwd", "clockwatch")
		if !ok {
			t.Fatal("no clockwatch user after install")
		}
		// name:x:uid:gid:gecos:home:shell
		f := strings.Split(pw, ":")
		if len(f) != 7 {
			t.Fatalf("passwd entry %q", pw)
		}
		if f[5] != "/var/lib/clockwatch" || !strings.HasSuffix(f[6], "nologin") {
			t.Errorf("clockwatch user %q: want home /var/lib/clockwatch and a nologin shell", pw)
		}
		var uid int
		fmt.Sscan(f[2], &uid)
		if uid == 0 || uid >= 1000 {
			t.Errorf("clockwatch uid %d: want a system uid (1..999)", uid)
		}
		gr, ok := getent("group", "clockwatch")
		if !ok || strings.Split(gr, ":")[2] != f[3] {
			t.Errorf("clockwatch group %q is not the user's primary group (gid %s)", gr, f[3])
		}
		groups := strings.Fields(run(t, "id", "-nG", "clockwatch"))
		for _, chrony := range []string{"_chrony", "chrony"} {
			_, exists := getent("group", chrony)
			if member := slices.Contains(groups, chrony); member != exists {
				t.Errorf("group %s exists: %v, clockwatch a member: %v (groups %q)", chrony, exists, member, groups)
			}
		}
	})

	// This machine's PID 1 is not systemd, as when a machine image is
	// built: the postinst enables the service with deb-systemd-helper all
	// the same, so that the image boots with clockwatch running.
	wants := "/etc/systemd/system/multi-user.target.wants/clockwatch.service"
	t.Run("enabled for the next boot without systemd running", func(t *testing.T) {
		if exists("/run/systemd/system") {
			t.Skip("systemd runs here: this is the image-build case only where it does not")
		}
		// deb-systemd-helper links to the unit as it finds it: /lib on a
		// merged /usr (Debian 12), /usr/lib otherwise; both are the file.
		if target, err := os.Readlink(wants); err != nil || (target != "/usr/lib/systemd/system/clockwatch.service" && target != "/lib/systemd/system/clockwatch.service") {
			t.Errorf("%s -> %q (%v): want the link to the unit deb-systemd-helper makes", wants, target, err)
		}
		if !exists("/var/lib/systemd/deb-systemd-helper-enabled/clockwatch.service.dsh-also") {
			t.Error("deb-systemd-helper has no state for clockwatch.service: an upgrade could not tell an administrator's disable")
		}
		if exists("/etc/systemd/system/sockets.target.wants/clockwatch.socket") {
			t.Error("clockwatch.socket is enabled: socket activation is the administrator's choice (docs/install.md)")
		}
	})

	t.Run("changelog", func(t *testing.T) {
		if !exists("/usr/share/doc/clockwatch/changelog.gz") {
			t.Error("no /usr/share/doc/clockwatch/changelog.gz in the package")
		}
	})

	t.Run("binary", func(t *testing.T) {
		out := run(t, "/usr/bin/clockwatch", "--config.file="+configPath, "--config.check")
		t.Logf("--config.check: %s", out)
		v := run(t, "/usr/bin/clockwatch", "version")
		if !strings.Contains(v, "version "+oldVersion) {
			t.Errorf("clockwatch version printed %q, want version %s", v, oldVersion)
		}
		// "tags: unknown" is right (no build tags); the stamped fields must
		// not be.
		for line := range strings.Lines(v) {
			for _, field := range []string{"branch: unknown", "revision: unknown", "build user:", "build date:"} {
				if strings.Contains(line, field) && strings.Contains(line, "unknown") {
					t.Errorf("clockwatch version: %q is not stamped", strings.TrimSpace(line))
				}
			}
		}
	})

	t.Run("installed units verify", func(t *testing.T) {
		cmd := exec.Command(analyze, "verify", "/usr/lib/systemd/system/clockwatch.service", "/usr/lib/systemd/system/clockwatch.socket")
		cmd.Env = append(os.Environ(), "SYSTEMD_COLORS=0")
		out, err := cmd.CombinedOutput()
		if err != nil || len(out) != 0 {
			t.Errorf("systemd-analyze verify of the installed units: %v\n%s", err, out)
		}
	})

	// The administrator edits the configuration; an upgrade keeps the edit.
	orig, err := os.ReadFile(configPath)
	if err != nil {
		t.Fatal(err)
	}
	edited := append(orig, "# edited by the administrator: keep me across upgrades\n"...)
	if err := os.WriteFile(configPath, edited, 0o644); err != nil {
		t.Fatal(err)
	}
	// State the daemon would have written, for the purge to remove.
	if err := os.MkdirAll("/var/lib/clockwatch", 0o750); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile("/var/lib/clockwatch/epoch", []byte("test\n"), 0o640); err != nil {
		t.Fatal(err)
	}

	// The administrator takes clockwatch out of chrony's group: the upgrade
	// must not add it back (the group is granted on the first install).
	chronyGroup := ""
	for _, g := range []string{"_chrony", "chrony"} {
		if _, ok := getent("group", g); ok && slices.Contains(strings.Fields(run(t, "id", "-nG", "clockwatch")), g) {
			chronyGroup = g
			run(t, "gpasswd", "-d", "clockwatch", g)
			break
		}
	}

	dpkg(t, "-i", newDeb)
	t.Run("upgrade keeps the administrator's group change", func(t *testing.T) {
		if chronyGroup == "" {
			t.Skip("no chrony group here")
		}
		if slices.Contains(strings.Fields(run(t, "id", "-nG", "clockwatch")), chronyGroup) {
			t.Errorf("the upgrade added clockwatch to %s again after the administrator removed it", chronyGroup)
		}
	})
	t.Run("upgrade", func(t *testing.T) {
		if got, _ := os.ReadFile(configPath); string(got) != string(edited) {
			t.Errorf("the upgrade replaced the edited %s:\n%s", configPath, got)
		}
		for _, suffix := range []string{".dpkg-dist", ".dpkg-new", ".dpkg-old"} {
			if exists(configPath + suffix) {
				t.Errorf("%s%s exists: dpkg saw a conflict where the packaged file did not change", configPath, suffix)
			}
		}
		if v := run(t, "/usr/bin/clockwatch", "version"); !strings.Contains(v, "version "+newVersion) {
			t.Errorf("after the upgrade clockwatch version printed %q, want %s", v, newVersion)
		}
		run(t, "/usr/bin/clockwatch", "--config.file="+configPath, "--config.check")
		if _, ok := getent("passwd", "clockwatch"); !ok {
			t.Error("the upgrade lost the clockwatch user")
		}
	})

	installed := strings.Fields(run(t, "dpkg", "-L", "clockwatch"))
	dpkg(t, "--remove", "clockwatch")
	t.Run("remove keeps configuration and user", func(t *testing.T) {
		if st := packageStatus(); st != "rc" {
			t.Errorf("after dpkg --remove: status %q, want rc (config files remain)", st)
		}
		for _, p := range []string{"/usr/bin/clockwatch", "/usr/lib/systemd/system/clockwatch.service", "/usr/lib/udev/rules.d/60-clockwatch-vmclock.rules", "/usr/share/doc/clockwatch"} {
			if exists(p) {
				t.Errorf("%s still exists after dpkg --remove", p)
			}
		}
		if got, _ := os.ReadFile(configPath); string(got) != string(edited) {
			t.Errorf("dpkg --remove did not keep the edited %s", configPath)
		}
		if _, ok := getent("passwd", "clockwatch"); !ok {
			t.Error("dpkg --remove removed the clockwatch user; only a purge should")
		}
	})

	dpkg(t, "--purge", "clockwatch")
	t.Run("purge leaves nothing but the system user", func(t *testing.T) {
		if st := packageStatus(); st != "" && !strings.HasPrefix(st, "un") {
			t.Errorf("after dpkg --purge: status %q, want not installed", st)
		}
		// Directories shared with the system (/usr/bin, /etc, ...) stay;
		// everything of clockwatch's goes.
		for _, p := range installed {
			if strings.Contains(p, "clockwatch") && exists(p) {
				t.Errorf("%s is left after dpkg --purge", p)
			}
		}
		for _, p := range []string{"/etc/clockwatch", "/var/lib/clockwatch", "/run/clockwatch"} {
			if exists(p) {
				t.Errorf("%s is left after dpkg --purge", p)
			}
		}
		// The system user and group stay, as Debian's packages keep theirs.
		for _, db := range []string{"passwd", "group"} {
			if _, ok := getent(db, "clockwatch"); !ok {
				t.Errorf("dpkg --purge removed the clockwatch %s entry: Debian keeps system users", db)
			}
		}
		for _, p := range []string{wants, "/etc/systemd/system/clockwatch.service",
			"/var/lib/systemd/deb-systemd-helper-enabled/clockwatch.service.dsh-also",
			"/var/lib/systemd/deb-systemd-helper-masked/clockwatch.service"} {
			if exists(p) {
				t.Errorf("%s is left after dpkg --purge", p)
			}
		}
		for _, chrony := range []string{"_chrony", "chrony"} {
			if gr, ok := getent("group", chrony); ok && slices.Contains(strings.Split(strings.Split(gr, ":")[3], ","), "clockwatch") {
				t.Errorf("clockwatch is still listed in group %s: %q", chrony, gr)
			}
		}
	})
}
