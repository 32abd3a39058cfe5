//go:build linux

package main

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"reflect"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/clockwatch/clockwatch/internal/config"
	"github.com/clockwatch/clockwatch/internal/sched"
)

// commands are every subcommand of the binary.
var commands = []string{"run", "status", "version", "events", "record", "replay", "watch", "drill", "host-dirs", "help"}

// runBinary runs the built binary with env (NAME=value) added to this
// process's environment and returns its exit code and output; a run that
// outlives 15 s is killed and fails the test.
func runBinary(t *testing.T, env []string, args ...string) (code int, stdout, stderr string) {
	t.Helper()
	code, stdout, stderr, timedOut := execBinary(t, 15*time.Second, env, args...)
	if timedOut {
		t.Fatalf("clockwatch %s did not return within 15 s; stdout:\n%s\nstderr:\n%s", strings.Join(args, " "), stdout, stderr)
	}
	return code, stdout, stderr
}

// execBinary runs the built binary for at most timeout (then kills it) and
// returns its exit code, output and whether it was killed.
func execBinary(t *testing.T, timeout time.Duration, env []string, args ...string) (code int, stdout, stderr string, timedOut bool) {
	t.Helper()
	ctx, cancel := context.WithTimeout(t.Context(), timeout)
	defer cancel()
	cmd := exec.CommandContext(ctx, binary, args...)
	cmd.Env = append(os.Environ(), env...)
	var out, errOut bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &errOut
	err := cmd.Run()
	var ee *exec.ExitError
	switch {
	case ctx.Err() != nil:
		timedOut = true
	case errors.As(err, &ee):
		code = ee.ExitCode()
	case err != nil:
		t.Fatal(err)
	}
	return code, out.String(), errOut.String(), timedOut
}

// TestHelpTouchesNothing: --help of the binary and of every subcommand, and
// `help [command]`, print the usage on standard output, exit 0 and neither
// run the command nor write anything.
func TestHelpTouchesNothing(t *testing.T) {
	t.Parallel()
	type helpCase struct {
		args []string
		want string // how the usage starts
	}
	cases := []helpCase{{[]string{"--help"}, "usage: clockwatch [<flags>]"}, {[]string{"-h"}, "usage: clockwatch [<flags>]"}, {[]string{"help"}, "usage: clockwatch [<flags>]"}}
	for _, c := range commands {
		want := "usage: clockwatch " + c
		if c == "help" {
			want = "usage: clockwatch" // kingpin: help --help is the top-level help
		}
		cases = append(cases, helpCase{[]string{c, "--help"}, want}, helpCase{[]string{"help", c}, "usage: clockwatch " + c})
	}
	for _, tc := range cases {
		t.Run(strings.Join(tc.args, " "), func(t *testing.T) {
			t.Parallel()
			state, runtime := t.TempDir(), t.TempDir()
			args := tc.args
			if tc.args[0] == "run" || tc.args[0] == "--help" || tc.args[0] == "-h" {
				// A loopback port, should the daemon start when it must not.
				args = append(append([]string(nil), tc.args...), "--web.listen-address=127.0.0.1:0")
			}
			code, out, errOut := runBinary(t, []string{"STATE_DIRECTORY=" + state, "RUNTIME_DIRECTORY=" + runtime}, args...)
			want := tc.want
			if code != 0 || !strings.HasPrefix(out, want) || errOut != "" {
				t.Errorf("exit %d, want 0 with %q on stdout and nothing on stderr; stdout:\n%s\nstderr:\n%s", code, want, out, errOut)
			}
			for _, d := range []string{state, runtime} {
				if entries, _ := os.ReadDir(d); len(entries) != 0 {
					t.Errorf("help wrote into %s: %v", d, entries)
				}
			}
		})
	}
}

func TestVersionFlag(t *testing.T) {
	t.Parallel()
	code, out, errOut := runBinary(t, nil, "--version")
	_, sub, _ := runBinary(t, nil, "version")
	if code != 0 || !strings.HasPrefix(out, "clockwatch, version ") || errOut != "" || out != sub {
		t.Errorf("--version: exit %d, stdout %q, stderr %q; want 0 and what `clockwatch version` prints (%q)", code, out, errOut, sub)
	}
}

// TestGOMAXPROCS: the daemon runs on one CPU unless --runtime.gomaxprocs or
// GOMAXPROCS says otherwise; 0 leaves the runtime's default; a negative
// count is a usage error.
func TestGOMAXPROCS(t *testing.T) {
	for _, tc := range []struct {
		name string
		env  string
		args []string
		want int // -1: not set
		code int
	}{
		{name: "default", want: 1},
		{name: "flag", args: []string{"--runtime.gomaxprocs=3"}, want: 3},
		{name: "environment", env: "2", want: 2},
		{name: "flag over environment", env: "2", args: []string{"--runtime.gomaxprocs=4"}, want: 4},
		{name: "runtime default", args: []string{"--runtime.gomaxprocs=0"}, want: -1},
		{name: "negative", args: []string{"--runtime.gomaxprocs=-1"}, want: -1, code: 2},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if tc.env != "" {
				t.Setenv("GOMAXPROCS", tc.env)
			} else {
				t.Setenv("GOMAXPROCS", "")
				os.Unsetenv("GOMAXPROCS")
			}
			var stdout, stderr bytes.Buffer
			got := -1
			c := &cli{stdout: &stdout, stderr: &stderr, getenv: func(string) string { return "" },
				setMaxProcs: func(n int) int { got = n; return 0 }}
			code := c.run(t.Context(), append([]string{"--config.file=", "--config.check"}, tc.args...))
			if code != tc.code || got != tc.want {
				t.Errorf("exit %d, GOMAXPROCS set to %d; want exit %d, %d (stderr %q)", code, got, tc.code, tc.want, stderr.String())
			}
			if tc.code != 0 && !strings.Contains(stderr.String(), "--runtime.gomaxprocs must be 0 or more") {
				t.Errorf("stderr %q does not name the flag", stderr.String())
			}
		})
	}
}

// TestHelpGolden: each command's --help lists the flags that apply to it and
// only those (testdata/help/COMMAND.golden; -update rewrites them).
func TestHelpGolden(t *testing.T) {
	t.Parallel()
	// Every command the CLI declares: a new one cannot go without its golden.
	all := []string{""}
	app, _ := (&cli{stdout: new(bytes.Buffer), stderr: new(bytes.Buffer)}).app()
	for _, c := range app.Model().Commands {
		all = append(all, c.Name)
	}
	for _, cmd := range all {
		name := cmd
		if name == "" {
			name = "clockwatch"
		}
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			args := []string{"--help"}
			if cmd != "" {
				args = []string{cmd, "--help"}
			}
			var out, errOut bytes.Buffer
			c := &cli{stdout: &out, stderr: &errOut, getenv: func(string) string { return "" }}
			if code := c.run(t.Context(), args); code != 0 || errOut.Len() != 0 {
				t.Fatalf("%v: exit %d, stderr %q", args, code, errOut.String())
			}
			golden := filepath.Join("testdata", "help", name+".golden")
			if *update {
				if err := os.MkdirAll(filepath.Dir(golden), 0o755); err != nil {
					t.Fatal(err)
				}
				if err := os.WriteFile(golden, out.Bytes(), 0o644); err != nil {
					t.Fatal(err)
				}
			}
			want, err := os.ReadFile(golden)
			if err != nil {
				t.Fatal(err)
			}
			if diff := cmp.Diff(string(want), out.String()); diff != "" {
				t.Errorf("%v (-want +got):\n%s", args, diff)
			}
		})
	}
}

// daemonFlags are flags only the daemon (run) takes.
var daemonFlags = []string{"--web.listen-address=:1", "--web.telemetry-path=/m", "--config.check", "--collector.chrony",
	"--no-collector.ntpd", "--runtime.gomaxprocs=2", "--web.config.file=x", "--web.systemd-socket"}

// TestDaemonFlagsElsewhere: a daemon flag given to another command is a
// usage error naming the command that takes it, not silently accepted.
func TestDaemonFlagsElsewhere(t *testing.T) {
	t.Parallel()
	for _, cmd := range []string{"status", "version", "events", "record", "replay", "watch", "drill", "host-dirs"} {
		for _, flag := range daemonFlags {
			var out, errOut bytes.Buffer
			c := &cli{stdout: &out, stderr: &errOut, getenv: func(string) string { return "" }}
			name, _, _ := strings.Cut(flag, "=")
			code := c.run(t.Context(), []string{cmd, flag})
			if code != 2 || !strings.Contains(errOut.String(), name+" is not a flag of "+cmd) || !strings.Contains(errOut.String(), "clockwatch run") {
				t.Errorf("clockwatch %s %s: exit %d, stderr %q; want 2 and that it is clockwatch run's", cmd, flag, code, errOut.String())
			}
		}
	}
	for _, tc := range []struct {
		args []string
		want string
	}{
		{[]string{"--web.listen-address=:1", "status"}, "--web.listen-address is not a flag of status but of clockwatch run"},
		{[]string{"--config.file=", "--config.check", "--runtime.gomaxprocs=2", "events"}, "--config.check, --runtime.gomaxprocs are not flags of events but of clockwatch run"},
		{[]string{"--chrony.address=/x", "status"}, "give --chrony.address after it: clockwatch status --chrony.address=/x"},
	} {
		var out, errOut bytes.Buffer
		c := &cli{stdout: &out, stderr: &errOut, getenv: func(string) string { return "" }}
		if code := c.run(t.Context(), tc.args); code != 2 || !strings.Contains(errOut.String(), tc.want) ||
			!strings.Contains(errOut.String(), "but for --config.file, --log.level, --log.format, which every command takes on either side") {
			t.Errorf("clockwatch %s: exit %d, stderr %q; want 2 and %q", strings.Join(tc.args, " "), code, errOut.String(), tc.want)
		}
	}
}

// TestSharedFlagsEitherSide: the flags every command shares are taken
// before the command as after it, as git, kubectl and kingpin's tools take
// global flags. Before the fix `clockwatch --config.file=F status` was
// refused ("flags before a command are the daemon's").
func TestSharedFlagsEitherSide(t *testing.T) {
	t.Parallel()
	app, _ := (&cli{stdout: new(bytes.Buffer), stderr: new(bytes.Buffer)}).app()
	for _, cmd := range app.Model().Commands {
		for _, place := range []string{"before", "after"} {
			shared := []string{"--config.file=/etc/x.yml", "--log.level=debug", "--log.format=json"}
			args := append(append([]string{}, shared...), cmd.Name)
			if place == "after" {
				args = append([]string{cmd.Name}, shared...)
			}
			if cmd.Name == "replay" || cmd.Name == "host-dirs" {
				args = append(args, "/x") // their required argument
			}
			c := &cli{stdout: new(bytes.Buffer), stderr: new(bytes.Buffer), getenv: func(string) string { return "" }}
			capp, _ := c.app()
			selected, code, err := parse(capp, args)
			if err != nil || code >= 0 || selected != cmd.Name {
				t.Errorf("clockwatch %s: command %q, code %d, err %v; want %s to run", strings.Join(args, " "), selected, code, err, cmd.Name)
				continue
			}
			if c.configFile != "/etc/x.yml" || !c.configFileSet || c.logLevel != "debug" || c.logFormat != "json" {
				t.Errorf("clockwatch %s: config.file %q (set %v), log.level %q, log.format %q", strings.Join(args, " "), c.configFile, c.configFileSet, c.logLevel, c.logFormat)
			}
		}
	}
}

// TestHelpNamesRealKeys: every configuration key a command's --help names
// (a dotted word whose first part is a section of the configuration) is a
// key the configuration takes. Before the fix record's help named
// step.interval, which does not exist (clock.sample_interval).
func TestHelpNamesRealKeys(t *testing.T) {
	t.Parallel()
	goldens, err := filepath.Glob(filepath.Join("testdata", "help", "*.golden"))
	if err != nil || len(goldens) == 0 {
		t.Fatalf("no help goldens: %v", err)
	}
	sections := map[string]bool{}
	for _, f := range reflect.VisibleFields(reflect.TypeFor[config.Config]()) {
		if name, _, _ := strings.Cut(f.Tag.Get("yaml"), ","); name != "" && name != "-" {
			sections[name] = true
		}
	}
	// A dotted word not part of a flag (--config.file), a path or a file
	// name.
	keyRE := regexp.MustCompile(`(?:^|[^-a-zA-Z0-9_./\]])([a-z_]+(?:\.[a-z_]+)+)`)
	checked := 0
	for _, g := range goldens {
		text, err := os.ReadFile(g)
		if err != nil {
			t.Fatal(err)
		}
		// Help text wraps lines: join them so a key is one word.
		joined := regexp.MustCompile(`\s+`).ReplaceAllString(string(text), " ")
		for _, m := range keyRE.FindAllStringSubmatch(joined, -1) {
			key := m[1]
			first, _, _ := strings.Cut(key, ".")
			if !sections[first] {
				continue
			}
			checked++
			if err := keyExists(key); err != nil {
				t.Errorf("%s names %s: %v", g, key, err)
			}
		}
	}
	if checked == 0 {
		t.Error("no configuration key found in the help texts: the pattern is wrong")
	}
}

// keyExists parses a configuration that sets the dotted key to null: an
// unknown key is refused by name.
func keyExists(key string) error {
	var b strings.Builder
	for i, seg := range strings.Split(key, ".") {
		fmt.Fprintf(&b, "%s%s:", strings.Repeat("  ", i), seg)
		b.WriteString("\n")
	}
	_, err := config.Parse([]byte(b.String()), "help")
	if err != nil && strings.Contains(err.Error(), "unknown key") {
		return err
	}
	return nil
}

// niceThreads is a process of two threads started at nice 0, for
// TestRuntimeNice; denied refuses a lower value as the kernel does without
// CAP_SYS_NICE.
type niceThreads struct {
	nice   map[int]int
	denied bool
}

func (n *niceThreads) IDs() ([]int, error)       { return []int{7, 8}, nil }
func (n *niceThreads) Nice(tid int) (int, error) { return n.nice[tid], nil }
func (n *niceThreads) SetNice(tid, v int) error {
	if n.denied && v < n.nice[tid] {
		return sched.ErrDenied
	}
	n.nice[tid] = v
	return nil
}

// TestRuntimeNice: the daemon lowers every thread to --runtime.nice (-10 by
// default) before it reads its configuration's consequences, says so once,
// says why not when refused, leaves a configuration check alone, and
// rejects a value out of the kernel's range.
func TestRuntimeNice(t *testing.T) {
	t.Parallel()
	missing := "--config.file=" + filepath.Join(t.TempDir(), "missing.yml")
	for _, tc := range []struct {
		name   string
		args   []string
		denied bool
		want   map[int]int
		code   int
		log    string
	}{
		{name: "default", args: []string{missing}, want: map[int]int{7: -10, 8: -10}, code: 1, log: "nice 0 → -10 on 2 threads"},
		{name: "flag", args: []string{missing, "--runtime.nice=-5"}, want: map[int]int{7: -5, 8: -5}, code: 1, log: "nice 0 → -5 on 2 threads"},
		{name: "no right", args: []string{missing}, denied: true, want: map[int]int{7: 0, 8: 0}, code: 1, log: "no CAP_SYS_NICE (nor an RLIMIT_NICE reaching -10), nice stays 0"},
		{name: "config check", args: []string{"--config.file=", "--config.check"}, want: map[int]int{7: 0, 8: 0}, code: 0},
		{name: "out of range", args: []string{missing, "--runtime.nice=-21"}, want: map[int]int{7: 0, 8: 0}, code: 2, log: "--runtime.nice must be -20 to 19, got -21"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			var stdout, stderr bytes.Buffer
			th := &niceThreads{nice: map[int]int{7: 0, 8: 0}, denied: tc.denied}
			c := &cli{stdout: &stdout, stderr: &stderr, getenv: func(string) string { return "" }, threads: th}
			code := c.run(t.Context(), tc.args)
			if code != tc.code {
				t.Errorf("exit %d, want %d (stderr %q)", code, tc.code, stderr.String())
			}
			if diff := cmp.Diff(tc.want, th.nice); diff != "" {
				t.Errorf("threads' nice (-want +got):\n%s", diff)
			}
			if n := strings.Count(stderr.String(), "scheduling priority"); tc.log != "" && !strings.Contains(stderr.String(), tc.log) || tc.code == 1 && n != 1 {
				t.Errorf("stderr %q: want %q logged once (%d)", stderr.String(), tc.log, n)
			}
		})
	}
}
