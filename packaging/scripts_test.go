package packaging_test

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
)

// fakeCommands returns the shell bodies of the stand-ins for the
// user-management tools and systemctl the maintainer scripts call. Mutating
// commands append their command line to $LOG; getent and id answer from
// files under $STATE.
func fakeCommands() map[string]string {
	m := map[string]string{
		"getent": `[ -e "$STATE/$1/$2" ] && echo "$2:x:999:999::/var/lib/$2:/usr/sbin/nologin"`,
		"id":     `cat "$STATE/groups-of-$2" 2>/dev/null || echo "$2"`,
	}
	for _, c := range []string{"groupadd", "useradd", "usermod", "userdel", "groupdel", "systemctl", "udevadm"} {
		m[c] = `echo "` + c + ` $*" >>"$LOG"`
	}
	// systemctl is-enabled answers as the preset policy in $STATE/preset
	// says (enable when there is none, as systemd's default).
	m["systemctl"] += `
[ "$1" != is-enabled ] || ! grep -qx disable "$STATE/preset" 2>/dev/null`
	// deb-systemd-helper was-enabled answers false after an administrator's
	// disable ($STATE/preset says disable), true otherwise (a first install).
	m["deb-systemd-helper"] = `echo "deb-systemd-helper $*" >>"$LOG"
[ "$1 $2" != "--quiet was-enabled" ] || ! grep -qx disable "$STATE/preset" 2>/dev/null`
	return m
}

// fakeBin is the directory of fakeCommands and of a policy-rc.d that exits
// with the code in $STATE/policy. TestMain writes it before any test runs:
// an executable written while a parallel test forks stays open for writing
// in the child until it execs, and running it then fails with ETXTBSY
// ("Text file busy"), which the scripts' "|| true" would hide.
var fakeBin string

func TestMain(m *testing.M) {
	dir, err := os.MkdirTemp("", "clockwatch-packaging-fakes-")
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	fakeBin = dir
	fakes := fakeCommands()
	fakes["policy-rc.d"] = `exit "$(cat "$STATE/policy")"`
	for name, body := range fakes {
		if err := os.WriteFile(filepath.Join(dir, name), []byte("#!/bin/sh\n"+body+"\n"), 0o755); err != nil {
			fmt.Fprintln(os.Stderr, err)
			os.Exit(1)
		}
	}
	code := m.Run()
	os.RemoveAll(dir)
	os.Exit(code)
}

// runScript runs one maintainer script with fake tools, a fake systemd
// runtime directory, a fake udev one (when udev is set) and a fake
// policy-rc.d, and returns the commands it ran. The paths the scripts touch
// (/run/systemd/system, /run/udev, policy-rc.d, the state and runtime
// directories) are rewritten into the test's directory, so the script
// cannot change this machine.
func runScript(t *testing.T, script string, args []string, systemd, udev bool, policy int, users, groups []string, memberOf, preset string) []string {
	t.Helper()
	dir := t.TempDir()
	state := filepath.Join(dir, "state")
	for _, d := range []string{filepath.Join(state, "passwd"), filepath.Join(state, "group"), filepath.Join(dir, "var/lib/clockwatch")} {
		if err := os.MkdirAll(d, 0o755); err != nil {
			t.Fatal(err)
		}
	}
	for _, u := range users {
		os.WriteFile(filepath.Join(state, "passwd", u), nil, 0o644)
	}
	for _, g := range groups {
		os.WriteFile(filepath.Join(state, "group", g), nil, 0o644)
	}
	if preset != "" {
		os.WriteFile(filepath.Join(state, "preset"), []byte(preset+"\n"), 0o644)
	}
	if memberOf != "" {
		os.WriteFile(filepath.Join(state, "groups-of-clockwatch"), []byte(memberOf+"\n"), 0o644)
	}
	runDir := filepath.Join(dir, "run/systemd/system")
	if systemd {
		os.MkdirAll(runDir, 0o755)
	}
	udevDir := filepath.Join(dir, "run/udev")
	if udev {
		os.MkdirAll(udevDir, 0o755)
	}
	policyRC := filepath.Join(dir, "policy-rc.d")
	if policy >= 0 {
		os.WriteFile(filepath.Join(state, "policy"), []byte(strconv.Itoa(policy)+"\n"), 0o644)
		if err := os.Symlink(filepath.Join(fakeBin, "policy-rc.d"), policyRC); err != nil {
			t.Fatal(err)
		}
	}

	src, err := os.ReadFile(filepath.Join("scripts", script))
	if err != nil {
		t.Fatal(err)
	}
	text := strings.NewReplacer(
		"/run/systemd/system", runDir,
		"/run/udev", udevDir,
		"/usr/sbin/policy-rc.d", policyRC,
		"rm -rf /var/lib/clockwatch /run/clockwatch",
		"rm -rf "+filepath.Join(dir, "var/lib/clockwatch")+" "+filepath.Join(dir, "run/clockwatch"),
	).Replace(string(src))
	for _, forbidden := range []string{" /var/", " /run/", " /etc/"} {
		if strings.Contains(text, "rm -rf"+forbidden) {
			t.Fatalf("%s removes a path under%s this test does not redirect", script, forbidden)
		}
	}
	path := filepath.Join(dir, script)
	if err := os.WriteFile(path, []byte(text), 0o644); err != nil {
		t.Fatal(err)
	}
	log := filepath.Join(dir, "log")
	cmd := exec.Command("/bin/sh", append([]string{path}, args...)...)
	cmd.Env = []string{"PATH=" + fakeBin + ":/usr/bin:/bin", "LOG=" + log, "STATE=" + state}
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("%s %q: %v\n%s", script, args, err, out)
	}
	b, _ := os.ReadFile(log)
	if script == "postremove.sh" && len(args) > 0 && args[0] == "purge" {
		if _, err := os.Stat(filepath.Join(dir, "var/lib/clockwatch")); err == nil {
			t.Errorf("postremove.sh purge left the state directory")
		}
	}
	return strings.Split(strings.TrimSpace(string(b)), "\n")
}

// TestMaintainerScripts checks what each script does for each way dpkg and
// rpm call it, with and without a running systemd: the systemd branch cannot
// be exercised for real on a machine whose PID 1 is not systemd.
func TestMaintainerScripts(t *testing.T) {
	t.Parallel()
	newUser := []string{
		"groupadd --system clockwatch",
		"useradd --system --gid clockwatch --home-dir /var/lib/clockwatch --no-create-home --shell /usr/sbin/nologin --comment clockwatch clock health daemon clockwatch",
	}
	// The udev rule for /dev/vmclock0, applied to a device that exists.
	udevApply := []string{
		"udevadm control --reload",
		"udevadm trigger --action=change --subsystem-match=misc --sysname-match=vmclock[0-9]*",
		"udevadm settle --timeout=10",
	}
	dshEnable := []string{"deb-systemd-helper unmask clockwatch.service", "deb-systemd-helper --quiet was-enabled clockwatch.service", "deb-systemd-helper enable clockwatch.service"}
	cat := func(parts ...[]string) []string {
		var all []string
		for _, p := range parts {
			all = append(all, p...)
		}
		return all
	}
	for _, tc := range []struct {
		name     string
		script   string
		args     []string
		systemd  bool
		udev     bool // udev runs (/run/udev)
		policy   int  // exit code of policy-rc.d, -1 for none
		users    []string
		groups   []string
		memberOf string
		preset   string // the rpm's preset policy for the unit: enable (default) or disable
		want     []string
	}{
		{
			name: "deb install with systemd and udev", script: "postinstall.sh", args: []string{"configure", ""},
			systemd: true, udev: true, policy: -1, groups: []string{"_chrony"},
			want: cat(newUser, udevApply, []string{"usermod -a -G _chrony clockwatch"}, dshEnable, []string{"systemctl daemon-reload", "systemctl start clockwatch.service"}),
		},
		{
			// No udev (a container): no udevadm, whether or not it is installed.
			name: "deb install with systemd, without udev", script: "postinstall.sh", args: []string{"configure", ""},
			systemd: true, policy: -1, groups: []string{"_chrony"},
			want: cat(newUser, []string{"usermod -a -G _chrony clockwatch"}, dshEnable, []string{"systemctl daemon-reload", "systemctl start clockwatch.service"}),
		},
		{
			// A machine image being built: enabled, so that it boots with
			// clockwatch running; nothing started.
			name: "deb install without systemd", script: "postinstall.sh", args: []string{"configure", ""},
			policy: -1, groups: []string{"_chrony"},
			want: cat(newUser, []string{"usermod -a -G _chrony clockwatch"}, dshEnable),
		},
		{
			name: "deb install, policy-rc.d forbids starting", script: "postinstall.sh", args: []string{"configure", ""},
			systemd: true, policy: 101,
			want: cat(newUser, dshEnable, []string{"systemctl daemon-reload"}),
		},
		{
			// An upgrade may bring the rule for the first time: applied too.
			name: "deb upgrade, user exists and is in _chrony", script: "postinstall.sh", args: []string{"configure", "0.9.0"},
			systemd: true, udev: true, policy: 0, users: []string{"clockwatch"}, groups: []string{"clockwatch", "_chrony"}, memberOf: "clockwatch _chrony",
			want: cat(udevApply, dshEnable, []string{"systemctl daemon-reload", "systemctl try-restart clockwatch.service"}),
		},
		{
			// The group is granted on the first install only.
			name: "deb upgrade after the administrator removed clockwatch from _chrony", script: "postinstall.sh", args: []string{"configure", "0.9.0"},
			systemd: true, policy: -1, users: []string{"clockwatch"}, groups: []string{"clockwatch", "_chrony"}, memberOf: "clockwatch",
			want: cat(dshEnable, []string{"systemctl daemon-reload", "systemctl try-restart clockwatch.service"}),
		},
		{
			name: "deb upgrade after systemctl disable: stays disabled", script: "postinstall.sh", args: []string{"configure", "0.9.0"},
			systemd: true, policy: -1, users: []string{"clockwatch"}, groups: []string{"clockwatch"}, preset: "disable",
			want: []string{"deb-systemd-helper unmask clockwatch.service", "deb-systemd-helper --quiet was-enabled clockwatch.service",
				"deb-systemd-helper update-state clockwatch.service", "systemctl daemon-reload", "systemctl try-restart clockwatch.service"},
		},
		{
			name: "deb abort-upgrade", script: "postinstall.sh", args: []string{"abort-upgrade", "1.0.0"},
			systemd: true, udev: true, policy: -1, want: []string{""},
		},
		{
			name: "rpm install on RHEL with a chrony group", script: "postinstall.sh", args: []string{"1"},
			systemd: true, udev: true, policy: -1, groups: []string{"chrony"},
			want: append(cat(newUser, udevApply), "usermod -a -G chrony clockwatch", "systemctl daemon-reload", "systemctl preset clockwatch.service", "systemctl is-enabled --quiet clockwatch.service", "systemctl start clockwatch.service"),
		},
		{
			name: "rpm install where the presets disable clockwatch", script: "postinstall.sh", args: []string{"1"},
			systemd: true, policy: -1, groups: []string{"chrony"}, preset: "disable",
			want: append(newUser, "usermod -a -G chrony clockwatch", "systemctl daemon-reload", "systemctl preset clockwatch.service", "systemctl is-enabled --quiet clockwatch.service"),
		},
		{
			name: "rpm upgrade", script: "postinstall.sh", args: []string{"2"},
			systemd: true, policy: -1, users: []string{"clockwatch"}, groups: []string{"clockwatch"},
			want: []string{"systemctl daemon-reload", "systemctl try-restart clockwatch.service"},
		},
		{
			name: "deb remove", script: "preremove.sh", args: []string{"remove"}, systemd: true, policy: -1,
			want: []string{"systemctl disable --now clockwatch.service clockwatch.socket"},
		},
		{
			name: "deb remove without systemd", script: "preremove.sh", args: []string{"remove"}, policy: -1,
			want: []string{""},
		},
		{
			name: "deb prerm upgrade", script: "preremove.sh", args: []string{"upgrade", "1.0.0"}, systemd: true, policy: -1,
			want: []string{""},
		},
		{
			name: "rpm erase", script: "preremove.sh", args: []string{"0"}, systemd: true, policy: -1,
			want: []string{"systemctl disable --now clockwatch.service clockwatch.socket"},
		},
		{
			name: "rpm preun upgrade", script: "preremove.sh", args: []string{"1"}, systemd: true, policy: -1,
			want: []string{""},
		},
		{
			name: "deb postrm remove", script: "postremove.sh", args: []string{"remove"}, systemd: true, policy: -1,
			users: []string{"clockwatch"}, groups: []string{"clockwatch"},
			want: []string{"systemctl daemon-reload", "deb-systemd-helper mask clockwatch.service"},
		},
		{
			// Debian keeps system users on purge (files they owned may
			// remain); so does the rpm.
			name: "deb purge keeps the user", script: "postremove.sh", args: []string{"purge"}, systemd: true, policy: -1,
			users: []string{"clockwatch"}, groups: []string{"clockwatch"},
			want: []string{"systemctl daemon-reload", "deb-systemd-helper purge clockwatch.service", "deb-systemd-helper unmask clockwatch.service"},
		},
		{
			name: "deb purge without systemd", script: "postremove.sh", args: []string{"purge"}, policy: -1,
			users: []string{"clockwatch"}, groups: []string{"clockwatch"},
			want: []string{"deb-systemd-helper purge clockwatch.service", "deb-systemd-helper unmask clockwatch.service"},
		},
		{
			name: "deb postrm upgrade", script: "postremove.sh", args: []string{"upgrade", "1.0.0"}, systemd: true, policy: -1,
			users: []string{"clockwatch"}, want: []string{""},
		},
		{
			name: "rpm erase keeps the user", script: "postremove.sh", args: []string{"0"}, systemd: true, policy: -1,
			users: []string{"clockwatch"}, groups: []string{"clockwatch"},
			want: []string{"systemctl daemon-reload"},
		},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			got := runScript(t, tc.script, tc.args, tc.systemd, tc.udev, tc.policy, tc.users, tc.groups, tc.memberOf, tc.preset)
			if diff := cmp.Diff(tc.want, got); diff != "" {
				t.Errorf("%s %q ran (-want +got):\n%s", tc.script, tc.args, diff)
			}
		})
	}
}
