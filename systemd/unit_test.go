package systemd_test

import (
	"bufio"
	"errors"
	"flag"
	"fmt"
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/clockwatch/clockwatch/internal/testtool"
)

var update = flag.Bool("update", false, "rewrite the golden files in testdata/")

// units are the unit files this package ships, installed under
// /usr/lib/systemd/system by the packages.
var units = []string{"clockwatch.service", "clockwatch.socket"}

// maxExposure is the highest `systemd-analyze security` exposure the service
// may have (the bar).
const maxExposure = 2.0

// unit is a parsed unit file: section → key → values in file order.
type unit map[string]map[string][]string

func parseUnit(t *testing.T, path string) unit {
	t.Helper()
	f, err := os.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	u := unit{}
	section := ""
	sc := bufio.NewScanner(f)
	for n := 1; sc.Scan(); n++ {
		line := strings.TrimSpace(sc.Text())
		switch {
		case line == "" || line[0] == '#' || line[0] == ';':
		case strings.HasPrefix(line, "[") && strings.HasSuffix(line, "]"):
			section = line[1 : len(line)-1]
			u[section] = map[string][]string{}
		case strings.HasSuffix(line, `\`):
			t.Fatalf("%s:%d: continuation lines are not supported by this test's parser", path, n)
		default:
			k, v, ok := strings.Cut(line, "=")
			if !ok || section == "" {
				t.Fatalf("%s:%d: not a key=value line in a section: %q", path, n, line)
			}
			u[section][k] = append(u[section][k], v)
		}
	}
	if err := sc.Err(); err != nil {
		t.Fatal(err)
	}
	return u
}

// TestUnitSettings pins the settings the daemon and the packages rely on,
// without any outside tool.
func TestUnitSettings(t *testing.T) {
	t.Parallel()
	svc := parseUnit(t, "clockwatch.service")
	sock := parseUnit(t, "clockwatch.socket")
	for _, tc := range []struct {
		u       unit
		section string
		key     string
		want    []string
	}{
		{svc, "Service", "Type", []string{"notify"}},
		{svc, "Service", "NotifyAccess", []string{"main"}},
		{svc, "Service", "ExecStart", []string{"/usr/bin/clockwatch --config.file=/etc/clockwatch/clockwatch.yml"}},
		{svc, "Service", "ExecReload", []string{"/bin/kill -HUP $MAINPID"}},
		{svc, "Service", "Restart", []string{"on-failure"}},
		{svc, "Service", "User", []string{"clockwatch"}},
		{svc, "Service", "Group", []string{"clockwatch"}},
		// The chrony group comes from the postinst's usermod: a group named
		// here that does not exist would fail the start.
		{svc, "Service", "SupplementaryGroups", nil},
		{svc, "Service", "RuntimeDirectory", []string{"clockwatch"}},
		{svc, "Service", "RuntimeDirectoryPreserve", []string{"yes"}},
		{svc, "Service", "StateDirectory", []string{"clockwatch"}},
		{svc, "Service", "CapabilityBoundingSet", []string{""}},
		{svc, "Service", "AmbientCapabilities", []string{""}},
		// ProtectClock=yes would also forbid the read-only adjtimex.
		{svc, "Service", "ProtectClock", []string{"no"}},
		{svc, "Service", "RestrictAddressFamilies", []string{"AF_UNIX AF_INET AF_INET6"}},
		// The VMClock page: bound into the private /dev when it exists, and
		// allowed by the misc major, not by path (systemd 252 warns at every
		// start where a DeviceAllow= path does not exist).
		{svc, "Service", "PrivateDevices", []string{"yes"}},
		{svc, "Service", "DevicePolicy", []string{"closed"}},
		{svc, "Service", "BindReadOnlyPaths", []string{"-/dev/vmclock0"}},
		{svc, "Service", "DeviceAllow", []string{"char-misc r"}},
		{svc, "Install", "WantedBy", []string{"multi-user.target"}},
		{sock, "Socket", "ListenStream", []string{"/run/clockwatch/stepdown.sock"}},
		{sock, "Socket", "FileDescriptorName", []string{"stepdown"}},
		{sock, "Socket", "SocketMode", []string{"0660"}},
		{sock, "Socket", "SocketGroup", []string{"clockwatch"}},
		{sock, "Install", "WantedBy", []string{"sockets.target"}},
	} {
		got := tc.u[tc.section][tc.key]
		if diff := cmp.Diff(tc.want, got); diff != "" {
			t.Errorf("[%s] %s= mismatch (-want +got):\n%s", tc.section, tc.key, diff)
		}
	}
	// Whatever the filter lists, the clock reads must stay allowed: the
	// last allow-list entry has to name adjtimex and clock_adjtime.
	filters := svc["Service"]["SystemCallFilter"]
	allowed := false
	for _, f := range filters {
		if !strings.HasPrefix(f, "~") {
			fields := strings.Fields(f)
			allowed = slices.Contains(fields, "adjtimex") && slices.Contains(fields, "clock_adjtime") || allowed && !slices.ContainsFunc(fields, func(s string) bool { return s == "adjtimex" })
		} else if slices.ContainsFunc(strings.Fields(f[1:]), func(s string) bool { return s == "adjtimex" || s == "@clock" }) {
			allowed = false
		}
	}
	if !allowed {
		t.Errorf("SystemCallFilter= %q does not end up allowing adjtimex and clock_adjtime", filters)
	}
}

// fakeRoot builds a directory systemd-analyze can use as --root: the host's
// system units (for the targets the units refer to), the units under test
// where the packages install them, and stand-ins for the binaries they run
// (verify checks that ExecStart= and ExecReload= exist).
func fakeRoot(t *testing.T) string {
	t.Helper()
	root := t.TempDir()
	sysdir := filepath.Join(root, "usr/lib/systemd/system")
	if err := os.CopyFS(sysdir, os.DirFS("/usr/lib/systemd/system")); err != nil {
		testtool.Missing(t, fmt.Sprintf("copying the host's systemd units (package systemd): %v", err))
	}
	for _, u := range units {
		b, err := os.ReadFile(u)
		if err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(sysdir, u), b, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	if err := os.MkdirAll(filepath.Join(root, "usr/bin"), 0o755); err != nil {
		t.Fatal(err)
	}
	for _, bin := range []string{"usr/bin/clockwatch", "usr/bin/kill"} {
		if err := os.WriteFile(filepath.Join(root, bin), []byte("#!/bin/sh\n"), 0o755); err != nil {
			t.Fatal(err)
		}
	}
	if err := os.Symlink("usr/bin", filepath.Join(root, "bin")); err != nil {
		t.Fatal(err)
	}
	return root
}

func systemdAnalyze(t *testing.T, args ...string) (string, error) {
	t.Helper()
	tool := testtool.Require(t, "systemd-analyze")
	cmd := exec.Command(tool, args...)
	cmd.Env = append(os.Environ(), "SYSTEMD_COLORS=0", "SYSTEMD_PAGER=", "SYSTEMD_LOG_COLOR=0")
	out, err := cmd.CombinedOutput()
	return string(out), err
}

// TestVerify runs systemd-analyze verify on both units. It exits 0 on unknown
// keys and bad values, so any output at all is a failure.
func TestVerify(t *testing.T) {
	t.Parallel()
	root := fakeRoot(t)
	out, err := systemdAnalyze(t, append([]string{"verify", "--root=" + root}, units...)...)
	if err != nil || out != "" {
		t.Errorf("systemd-analyze verify %s: %v, output:\n%s", strings.Join(units, " "), err, out)
	}
}

// TestVerifyCatchesMistakes makes sure TestVerify would notice a broken
// unit: a misspelt key only produces a warning on stderr.
func TestVerifyCatchesMistakes(t *testing.T) {
	t.Parallel()
	root := fakeRoot(t)
	path := filepath.Join(root, "usr/lib/systemd/system/clockwatch.service")
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	broken := strings.Replace(string(b), "Restart=on-failure", "Restart=on-failure\nRestartSecs=5s", 1)
	if err := os.WriteFile(path, []byte(broken), 0o644); err != nil {
		t.Fatal(err)
	}
	out, _ := systemdAnalyze(t, "verify", "--root="+root, "clockwatch.service")
	if !strings.Contains(out, "RestartSecs") {
		t.Errorf("systemd-analyze verify did not complain about an unknown key; output:\n%s", out)
	}
}

var exposureRE = regexp.MustCompile(`Overall exposure level for clockwatch\.service: ([0-9]+(?:\.[0-9]+)?)`)

// TestSecurity checks the overall exposure and keeps the list of the checks
// the service does not pass in testdata/security.golden, so that any change
// in hardening shows up in review (go test ./systemd -update rewrites it).
func TestSecurity(t *testing.T) {
	t.Parallel()
	root := fakeRoot(t)
	out, err := systemdAnalyze(t, "security", "--offline=yes", "--root="+root, "--no-pager",
		fmt.Sprintf("--threshold=%d", int(maxExposure*10)), "clockwatch.service")
	if err != nil {
		t.Errorf("systemd-analyze security --threshold=%d: %v", int(maxExposure*10), err)
	}
	m := exposureRE.FindStringSubmatch(out)
	if m == nil {
		t.Fatalf("no overall exposure in systemd-analyze security output:\n%s", out)
	}
	exposure, err := strconv.ParseFloat(m[1], 64)
	if err != nil {
		t.Fatal(err)
	}
	t.Logf("exposure %.1f", exposure)
	if exposure > maxExposure {
		t.Errorf("exposure %.1f, want at most %.1f:\n%s", exposure, maxExposure, out)
	}

	var failing []string
	for line := range strings.Lines(out) {
		if rest, ok := strings.CutPrefix(line, "✗ "); ok {
			f := strings.Fields(rest)
			failing = append(failing, f[0]+" "+f[len(f)-1])
		}
	}
	got := strings.Join(failing, "\n") + "\n" + fmt.Sprintf("overall %.1f\n", exposure)
	golden := filepath.Join("testdata", "security.golden")
	if *update {
		if err := os.WriteFile(golden, []byte(got), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	want, err := os.ReadFile(golden)
	if err != nil && !errors.Is(err, fs.ErrNotExist) {
		t.Fatal(err)
	}
	if diff := cmp.Diff(string(want), got); diff != "" {
		t.Errorf("failed security checks differ from %s (-want +got); run go test ./systemd -update if intended:\n%s", golden, diff)
	}
}
