//go:build linux

package main

import (
	"bytes"
	"context"
	"debug/elf"
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/clockwatch/clockwatch/internal/daemontest"
	"github.com/clockwatch/clockwatch/internal/testtool"
)

// A documented command is one of the clockwatch and go run lines
// docCommands finds, or a line of a shell code block: a fenced block marked
// sh, an indented block, or, for the programs shellPrograms knows, an
// unmarked fenced block (whose other lines are diagrams and output). Its key
// is the line as the reader types it: for clockwatch and go run the
// normalised form docCommands makes (cd DIR && args, placeholders given
// values), for the others the line with its prompt and comment cut.
// Inline code counts for clockwatch and go run lines only, as in
// docCommands: elsewhere prose names programs (`make build`) without
// showing a command to type.
type documented struct {
	key   string
	where []string // file:line of each place it is shown
}

// shellPrograms are programs the docs show in unmarked fenced blocks too.
var shellPrograms = map[string]bool{"chronyc": true, "journalctl": true, "systemctl": true, "kubectl": true, "curl": true, "make": true}

var (
	envAssign   = regexp.MustCompile(`^[A-Z_][A-Z0-9_]*=`)
	programWord = regexp.MustCompile(`^(\$|\./|/|[a-z])[A-Za-z0-9_./$-]*$`)
)

// shellProgram returns the program a shell line runs, "" when the line is
// no command (output, configuration, a diagram): a leading "(", sudo,
// "cd DIR &&" and NAME=value assignments are skipped.
func shellProgram(line string) string {
	words := shellWords(strings.TrimPrefix(line, "("))
	for len(words) > 0 {
		switch w := words[0]; {
		case w == "sudo":
			words = words[1:]
		case w == "cd" && len(words) > 2 && words[2] == "&&":
			words = words[3:]
		case envAssign.MatchString(w):
			words = words[1:]
		default:
			if !programWord.MatchString(w) {
				return ""
			}
			return w
		}
	}
	return ""
}

// documentedCommands returns every documented command, in the order the
// docs first show them.
func documentedCommands(t *testing.T) []*documented {
	t.Helper()
	var out []*documented
	byKey := map[string]*documented{}
	add := func(key, where string) {
		d := byKey[key]
		if d == nil {
			d = &documented{key: key}
			byKey[key] = d
			out = append(out, d)
		}
		d.where = append(d.where, where)
	}
	for _, c := range docCommands(t) {
		key := strings.Join(c.args, " ")
		if c.dir != "" {
			key = "cd " + c.dir + " && " + key
		}
		add(key, c.where)
	}
	for _, f := range docFiles(t) {
		data, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		lines := strings.Split(string(data), "\n")
		fence, inFence, inIndented, prevBlank := "", false, false, true
		for i := 0; i < len(lines); i++ {
			l := lines[i]
			where := strings.TrimPrefix(f, "../../") + ":" + strconv.Itoa(i+1)
			trimmed := strings.TrimSpace(l)
			if strings.HasPrefix(trimmed, "```") {
				inFence, fence = !inFence, strings.TrimPrefix(trimmed, "```")
				prevBlank, inIndented = false, false
				continue
			}
			indented := !inFence && (strings.HasPrefix(l, "    ") || strings.HasPrefix(l, "\t"))
			inIndented = indented && (inIndented || prevBlank)
			prevBlank = trimmed == ""
			if !(inFence && (fence == "sh" || fence == "")) && !inIndented {
				continue
			}
			for strings.HasSuffix(l, `\`) && i+1 < len(lines) {
				i++
				l = strings.TrimSuffix(l, `\`) + " " + strings.TrimSpace(lines[i])
			}
			if strings.HasPrefix(strings.TrimSpace(l), "#") {
				continue // a comment (docCommands reads "# clockwatch" as root's prompt)
			}
			l = prompt.ReplaceAllString(strings.TrimSpace(l), "")
			if j := strings.Index(l, " #"); j >= 0 {
				l = l[:j]
			}
			l = strings.Join(strings.Fields(l), " ")
			if _, ok := parseDocLine(l); ok || l == "" || strings.HasPrefix(l, "#") {
				continue // a clockwatch or go run line: docCommands has it
			}
			prog := shellProgram(l)
			if prog == "" || prog == "clockwatch" || (inFence && fence == "" && !shellPrograms[prog]) {
				continue
			}
			add(l, where)
		}
	}
	return out
}

// notRunnable are the documented commands this test does not run, and why:
// a match is a command's key, or a program (the first word after sudo,
// cd DIR && and NAME=value), which classifies every line that runs it.
var notRunnable = []struct{ match, why string }{
	// The host's service manager, packages and users.
	{"systemctl", "drives the host's systemd (start, enable, reload the service): the units are run in test/systemdvm"},
	{"journalctl", "reads the host's systemd journal of the clockwatch and chronyd services, which this test does not run"},
	{"apt", "installs or removes a package on the host (test/systemdvm installs the .deb in a VM)"},
	{"dnf", "installs or removes an RPM on the host; Debian has no dnf (the RPM is checked with rpm -qp and rpmlint in packaging/)"},
	{"install", "copies the binary, unit and configuration under /usr and /etc of the host (run as root): the package's layout is tested in packaging/"},
	{"useradd", "creates a system user on the host"},
	{"usermod", "adds the clockwatch user to the host's _chrony group"},
	{"gpasswd", "removes the clockwatch user from the host's _chrony group"},
	{"chronyc", "asks the host's chronyd, which this machine does not run (internal/probe/chrony's tests run chronyc against a loopback chronyd -x)"},
	{"scripts/test-deps.sh", "installs the test dependencies (apt-get install) on the host"},
	{"go install github.com/clockwatch/clockwatch/cmd/clockwatch@latest", "fetches the published module from the network (and installs into GOPATH/bin)"},
	{"GOFLAGS=-mod=mod GOWORK=off go install helm.sh/helm/v3/cmd/helm@v3.22.0", "fetches helm from the network and installs it into GOPATH/bin"},
	// Clusters, registries, images.
	{"kubectl", "talks to a Kubernetes cluster's API server"},
	{"helm", "installs the chart into a Kubernetes cluster (test/kubeapiserver/manifests renders it with helm template)"},
	{"skopeo", "copies the image to a registry over the network"},
	{"podman", "builds a container image with podman (a container engine and, for arm64, qemu-user); make image builds the same image without one (scripts/image.sh)"},
	// The project's own long runs: each is a test or target of its own.
	{"make test", "the whole suite (minutes, and the machine's other work): not from inside one package's test"},
	{"make test-redis", "the Redis Sentinel replay (examples/redislock), minutes long: scripts/test-examples.sh runs it"},
	{"make package", "builds the .deb and .rpm packages into dist/ of the checkout (packaging/ tests build them in a temporary directory)"},
	{"make image", "builds both images into dist/ of the checkout (minutes: cross-compiles for arm64)"},
	{"make -f wallclock.mk lint-wallclock CLOCKWATCH=\"$CLOCKWATCH\"", auditWalkthrough},
	{"scripts/test-examples.sh", "both incident replays with etcd, PostgreSQL and Redis (minutes): make test runs it"},
	{"lintian", "lints dist/'s .deb, which make package builds: packaging/install_test.go runs lintian on a package it builds"},
	{"scripts/rpmlint.sh", "lints dist/'s .rpm, which make package builds: packaging/install_test.go runs rpmlint on a package it builds"},
	{"cd examples/leader && go run ./cmd/replay", "the etcd and PostgreSQL incident replay at full scale (minutes): examples/leader/replay's test runs it scaled (scripts/test-examples.sh)"},
	{"cd examples/leader && go run ./cmd/replay -ttl 3s", "the etcd and PostgreSQL incident replay (about 35 s, a real etcd and PostgreSQL): examples/leader/replay's test runs it (scripts/test-examples.sh)"},
	{"cd examples/leader && go run ./cmd/leader --name A --etcd 127.0.0.1:2379 --dsn postgres://ledger@127.0.0.1/ledger --stepdown-socket /run/clockwatch/stepdown.sock",
		"one node of the replay: needs etcd, PostgreSQL and the host daemon's /run/clockwatch socket"},
	{"cd examples/redislock && GOWORK=off go run ./cmd/replay -locks", "the Redis Sentinel replay (a master, two replicas, three Sentinels): make test-redis runs it"},
	{"cd examples/redislock && GOWORK=off go run ./cmd/replay -run 'split brain' -events", "the Redis Sentinel replay: make test-redis runs it"},
	{"go run ./scripts/memflood -bin <clockwatch>", "the memory benchmark of docs/performance.md (minutes of load)"},
	{"go run ./scripts/authflood -bin <clockwatch> -drills 100", "the authorisation flood benchmark of docs/performance.md (minutes of load)"},
	{"(cd \"$CLOCKWATCH/cmd/clockwatch-vet\" && GOWORK=off go build -o \"$CLOCKWATCH/bin/clockwatch-vet\" .)", auditWalkthrough},
	{"$CLOCKWATCH/bin/clockwatch-vet", auditWalkthrough},
	{"go vet -vettool=\"$CLOCKWATCH/bin/clockwatch-vet\" ./...", auditWalkthrough},
	{"(cd \"$CLOCKWATCH/cmd/clockwatch-vet\" && GOWORK=off go install .)", auditWalkthrough},
	{"go build ./...", auditWalkthrough},
	{"\"$CLOCKWATCH/tools/javac-wallclock/build.sh\"", auditWalkthrough},
	{"javac", auditWalkthrough},
	// Shell around a command of the reader's.
	{"run-critical-job & j=$!", "the reader's own job, a placeholder"},
	{"wait -n $w $j; kill $j $w 2>/dev/null", "shell around the reader's job (the watch it waits for is run above)"},
}

// auditWalkthrough is why docs/audit.md's sh blocks do not run here: they
// run in the reader's project with $CLOCKWATCH a checkout, and
// TestDocsCommands (cmd/clockwatch-vet/docs_test.go, make test-audit) runs
// them in order on a small Go and Java project from a fresh clone.
const auditWalkthrough = "docs/audit.md's walkthrough in the reader's project ($CLOCKWATCH a checkout): cmd/clockwatch-vet's TestDocsCommands runs it in order (make test-audit)"

// classify returns why key cannot run here, "" when notRunnable has no
// entry for it.
func classify(key string) (why, match string) {
	prog := shellProgram(key)
	if strings.HasPrefix(key, "clockwatch") || strings.HasPrefix(key, "go run") || strings.HasPrefix(key, "cd ") {
		prog = "" // classified by key only
	}
	for _, n := range notRunnable {
		if n.match == key || (n.match == prog && prog != "") {
			return n.why, n.match
		}
	}
	return "", ""
}

// docEnv is what a documented command runs in: a throwaway working
// directory, the test's configuration and a daemon of the test's.
type docEnv struct {
	dir     string // working directory, a temporary one
	conf    string // a configuration: chrony off, the two triggers an undisciplined host holds off
	etcConf string // a copy of packaging/clockwatch.yml, for /etc/clockwatch/clockwatch.yml
	d       *daemontest.Daemon
}

// env returns the environment of a command against the daemon: HOME and
// the XDG directories are the working directory (a go command gets this
// process's, whose HOME holds its caches).
func (e *docEnv) env() []string {
	return append(os.Environ(), "RUNTIME_DIRECTORY="+e.d.RuntimeDir, "STATE_DIRECTORY="+e.d.StateDir,
		"HOME="+e.dir, "XDG_RUNTIME_DIR="+e.dir, "XDG_STATE_HOME="+e.dir)
}

// subst gives the placeholders of a documented clockwatch line this
// test's values: FILE the configuration, PATH the daemon's socket, the
// installed configuration a copy of the shipped one, and a record's
// duration 1s (the docs record a minute).
func (e *docEnv) subst(args []string) []string {
	out := slices.Clone(args)
	for i, a := range out {
		switch {
		case a == "/nonexistent/file" && i > 0 && out[i-1] == "replay":
			out[i] = "trace.jsonl"
		case strings.Contains(a, "/nonexistent/file"):
			out[i] = strings.ReplaceAll(a, "/nonexistent/file", e.conf)
		case a == "/nonexistent/path":
			out[i] = e.d.StepdownSocket()
		case strings.Contains(a, "/etc/clockwatch/clockwatch.yml"):
			out[i] = strings.ReplaceAll(a, "/etc/clockwatch/clockwatch.yml", e.etcConf)
		case i > 0 && out[i-1] == "--duration":
			out[i] = "1s"
		}
	}
	return out
}

// result is what a command did.
type result struct {
	code     int
	out      string // stdout and stderr
	timedOut bool
}

// waitStarted waits until the daemon has left the state of its start
// (every source has reported): a drill is refused before.
func (e *docEnv) waitStarted(t *testing.T) {
	t.Helper()
	deadline := time.Now().Add(20 * time.Second)
	for !strings.Contains(e.d.Log(), "type=resume reason=starting") {
		if time.Now().After(deadline) {
			t.Fatalf("the daemon did not leave its start state within 20s; log:\n%s", e.d.Log())
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// run runs argv in dir with e's environment for at most timeout.
func (e *docEnv) run(t *testing.T, timeout time.Duration, dir string, argv ...string) result {
	t.Helper()
	return runIn(t, timeout, dir, e.env(), argv...)
}

// runIn runs argv in dir with env for at most timeout.
func runIn(t *testing.T, timeout time.Duration, dir string, env []string, argv ...string) result {
	t.Helper()
	ctx, cancel := context.WithTimeout(t.Context(), timeout)
	defer cancel()
	cmd := exec.CommandContext(ctx, argv[0], argv[1:]...)
	cmd.Dir, cmd.Env = dir, env
	var out bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &out
	err := cmd.Run()
	var r result
	var ee *exec.ExitError
	switch {
	case ctx.Err() != nil:
		r.timedOut = true
	case errors.As(err, &ee):
		r.code = ee.ExitCode()
	case err != nil:
		t.Fatalf("%q: %v", argv, err)
	}
	r.out = out.String()
	return r
}

// clockwatch runs a documented clockwatch line (its args, clockwatch
// first) with the test's binary.
func (e *docEnv) clockwatch(t *testing.T, timeout time.Duration, args []string) result {
	t.Helper()
	return e.run(t, timeout, e.dir, append([]string{binary}, e.subst(args[1:])...)...)
}

// docRun runs one documented command against a fresh environment and
// asserts what it did.
type docRun func(t *testing.T, e *docEnv, args []string)

// want asserts r's exit code is one of codes and its output has each of
// wants.
func want(t *testing.T, what string, r result, codes []int, wants ...string) {
	t.Helper()
	if r.timedOut {
		t.Errorf("%s did not finish; output:\n%s", what, r.out)
		return
	}
	if !slices.Contains(codes, r.code) {
		t.Errorf("%s: exit %d, want one of %v; output:\n%s", what, r.code, codes, r.out)
	}
	for _, w := range wants {
		if !strings.Contains(r.out, w) {
			t.Errorf("%s: output lacks %q:\n%s", what, w, r.out)
		}
	}
}

// exits runs the clockwatch line and wants an exit code and output.
func exits(code int, wants ...string) docRun {
	return func(t *testing.T, e *docEnv, args []string) {
		want(t, strings.Join(args, " "), e.clockwatch(t, 20*time.Second, args), []int{code}, wants...)
	}
}

// silent runs a line whose output is empty here: events --since 24h --json
// when every event in the journal is older (JSON lines only, and none).
func silent(t *testing.T, e *docEnv, args []string) {
	r := e.clockwatch(t, 20*time.Second, args)
	want(t, strings.Join(args, " "), r, []int{0})
	if r.out != "" {
		t.Errorf("%s: want no output (every event is older than 24h), got:\n%s", strings.Join(args, " "), r.out)
	}
}

// status runs a status line: 0, 1 or 2 by this host's health, and the
// daemon's state was read from its socket.
func status(t *testing.T, e *docEnv, args []string) {
	r := e.clockwatch(t, 20*time.Second, args)
	want(t, strings.Join(args, " "), r, []int{0, 1, 2}, "Stepdown state : ok", "Clock health   :")
}

// daemonStarts runs the daemon line (the test adds a loopback port and its
// own directories): it serves /metrics. The bare `clockwatch` reads the
// default configuration file (absent here) and looks for the host's time
// daemons, as `clockwatch status` does in TestCLI: reads and loopback only.
func daemonStarts(t *testing.T, e *docEnv, args []string) {
	d := daemontest.Start(t, binary, daemontest.Options{Args: e.subst(args[1:])})
	if !strings.Contains(d.Log(), `msg="Listening on"`) {
		t.Errorf("%v: no Listening line in the log:\n%s", args, d.Log())
	}
}

// watching runs a watch line and, once it has printed the daemon's hello,
// a drill: the line that exits on stepdown exits 3 with the drill's
// stepdown; the one that does not prints the stepdown and the resume and
// exits 0 when interrupted.
func watching(t *testing.T, e *docEnv, args []string) {
	what := strings.Join(args, " ")
	exitsOnStepdown := slices.Contains(args, "--exit-on-stepdown")
	hello, stepdown, resume := "hello state=ok", "stepdown state=stepdown", "resume state=ok"
	if slices.Contains(args, "--json") {
		hello, stepdown, resume = `"type":"hello"`, `"type":"stepdown"`, `"type":"resume"`
	}
	ctx, cancel := context.WithTimeout(t.Context(), 20*time.Second)
	defer cancel()
	cmd := exec.CommandContext(ctx, binary, e.subst(args[1:])...)
	cmd.Dir, cmd.Env = e.dir, e.env()
	var out testtool.SyncBuffer
	cmd.Stdout, cmd.Stderr = &out, &out
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	waitFor := func(s string) {
		for !strings.Contains(out.String(), s) {
			if ctx.Err() != nil {
				t.Fatalf("%s: no %q within 20s; output:\n%s", what, s, out.String())
			}
			time.Sleep(20 * time.Millisecond)
		}
	}
	defer func() { _ = cmd.Process.Kill() }()
	waitFor(hello)
	drill := e.clockwatch(t, 20*time.Second, []string{"clockwatch", "drill", "--hold=300ms"})
	want(t, "the drill under the watch", drill, []int{0}, "stepdown state=stepdown")
	wantCode := 3
	if !exitsOnStepdown {
		waitFor(resume)
		wantCode = 0
		if err := cmd.Process.Signal(os.Interrupt); err != nil {
			t.Fatal(err)
		}
	}
	r := result{out: out.String()}
	var ee *exec.ExitError
	switch err := cmd.Wait(); {
	case ctx.Err() != nil:
		r.timedOut = true
	case errors.As(err, &ee):
		r.code = ee.ExitCode()
	case err != nil:
		t.Fatal(err)
	}
	r.out = out.String()
	want(t, what, r, []int{wantCode}, hello, stepdown)
}

// drills runs a drill line: it announces the stepdown and the resume.
func drills(t *testing.T, e *docEnv, args []string) {
	r := e.clockwatch(t, 30*time.Second, args)
	stepdown, resume := "stepdown state=stepdown", "resume state=ok"
	if slices.Contains(args, "--json") {
		stepdown, resume = `"type":"stepdown"`, `"type":"resume"`
	}
	wants := []string{stepdown, resume}
	if i := slices.Index(args, "--step"); i >= 0 && args[i+1] == "-12.4s" {
		wants = append(wants, "step=-12.4s")
	}
	if slices.Contains(args, "--step=-12.4s") {
		wants = append(wants, "step=-12.4s")
	}
	want(t, strings.Join(args, " "), r, []int{0}, wants...)
}

// recordReplay runs a record line for 1s (the docs record a minute; the
// bare synopsis records until interrupted). A replay line replays what the
// documented record line wrote into the working directory.
func recordReplay(t *testing.T, e *docEnv, args []string) {
	if args[1] == "record" {
		if !slices.Contains(args, "--duration") {
			args = append(args, "--duration", "1s")
		}
		wants := []string{`{"mono_ns":`}
		if slices.Contains(args, "--out") {
			wants = []string{"samples and 0 clock-set marks written to trace.jsonl"}
		}
		want(t, strings.Join(args, " "), e.clockwatch(t, 20*time.Second, args), []int{0}, wants...)
		return
	}
	rec := e.clockwatch(t, 20*time.Second, []string{"clockwatch", "record", "--duration", "1s", "--out", "trace.jsonl"})
	want(t, "record --duration 1s --out trace.jsonl", rec, []int{0}, "written to trace.jsonl")
	want(t, strings.Join(args, " "), e.clockwatch(t, 20*time.Second, args), []int{0}, "samples and 0 clock-set marks, 0 events")
}

// runnable are the documented commands this test runs, by key.
var runnable = map[string]docRun{
	"clockwatch": daemonStarts,
	"clockwatch --config.file=/nonexistent/file":            daemonStarts,
	"clockwatch status":                                     status,
	"clockwatch --config.file=/nonexistent/file status":     status,
	"clockwatch events":                                     exits(0, "step backward by 12.4s (-12.400000 s)", "resume after 8h0m0s suspended"),
	"clockwatch events --json":                              exits(0, `{"boot_id":"boot-a","type":"step","seq":1,"epoch":1,"step_seconds":-12.4`),
	"clockwatch events --since 24h --json":                  silent,
	"clockwatch watch":                                      watching,
	"clockwatch watch --json --exit-on-stepdown":            watching,
	"clockwatch watch --exit-on-stepdown --exit-on-unknown": watching,
	"clockwatch watch --json --heartbeats --exit-on-stepdown --exit-on-unknown --socket /nonexistent/path": watching,
	"clockwatch drill": drills,
	"clockwatch drill --reason step --step=-12.4s":                                          drills,
	"clockwatch drill --reason step --step -12.4s":                                          drills,
	"clockwatch drill --reason step --step -12.4s --hold 5s":                                drills,
	"clockwatch drill --reason drill --step 1s --hold 1s --json --socket /nonexistent/path": drills,
	"clockwatch --config.file=/nonexistent/file --config.check":                             exits(0, "configuration is valid"),
	"clockwatch --config.file=/etc/clockwatch/clockwatch.yml --config.check":                exits(0, "configuration is valid"),
	"clockwatch --version": exits(0, "clockwatch, version "),
	"clockwatch version":   exits(0, "clockwatch, version "),
	"clockwatch help":      exits(0, "usage: clockwatch [<flags>] <command>"),
	"clockwatch record":    recordReplay,
	"clockwatch record --duration 60s --out trace.jsonl": recordReplay,
	"clockwatch record --duration 1m --out trace.jsonl":  recordReplay,
	"clockwatch replay /nonexistent/file":                recordReplay,
	"clockwatch replay trace.jsonl":                      recordReplay,
	"mkdir -p ~/clockwatch-overlay":                      overlay,
	"cat >~/clockwatch-overlay/kustomization.yaml <<EOF": overlay,
	"CGO_ENABLED=0 GOOS=linux GOARCH=arm64 go build -trimpath -ldflags '-s -w' -o dist/linux-arm64/clockwatch ./cmd/clockwatch": crossBuild,
	"go run ./cmd/clockwatch":                                                                goRunDaemon,
	"go run ./mixin/cmd/mixin -out DIR -config {...}":                                        mixin,
	"curl -s http://localhost:9847/metrics | grep ^clockwatch_":                              curlMetrics,
	"socat - UNIX-CONNECT:/run/clockwatch/stepdown.sock":                                     socat,
	"python3 examples/boundedtime/boundedtime.py /run/clockwatch/clockbound/shm0 --watch 10": boundedtime,
}

// goRunDaemon runs the README's development loop: go run ./cmd/clockwatch
// from the checkout (on a loopback port, in the test's directories) serves
// /metrics; it is stopped once it does.
func goRunDaemon(t *testing.T, e *docEnv, args []string) {
	ctx, cancel := context.WithTimeout(t.Context(), 50*time.Second)
	defer cancel()
	cmd := exec.CommandContext(ctx, "go", "run", "./cmd/clockwatch", "--web.listen-address=127.0.0.1:0", "--config.file="+e.conf)
	cmd.Dir = "../.."
	cmd.Env = append(os.Environ(), "RUNTIME_DIRECTORY="+t.TempDir(), "STATE_DIRECTORY="+t.TempDir())
	// go run and the daemon it starts are a process group of their own,
	// killed as one when the context ends.
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true, Pdeathsig: syscall.SIGKILL}
	cmd.Cancel = func() error { return syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL) }
	var out testtool.SyncBuffer
	cmd.Stdout, cmd.Stderr = &out, &out
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	defer func() {
		// SIGTERM to the group go run made: the go command and its child.
		_ = syscall.Kill(-cmd.Process.Pid, syscall.SIGTERM)
		_ = cmd.Wait()
	}()
	for !strings.Contains(out.String(), `msg="Listening on"`) {
		if ctx.Err() != nil {
			t.Fatalf("go run ./cmd/clockwatch did not listen within 50s; output:\n%s", out.String())
		}
		time.Sleep(50 * time.Millisecond)
	}
}

// overlay runs docs/kubernetes.md's overlay, from its mkdir to the end of
// its here-document, as one script from the repository's root with HOME a
// temporary directory: the kustomization it writes names deploy/kubernetes
// and the registry's copy of the image (kubectl apply -k, which needs a
// cluster, is not run).
func overlay(t *testing.T, e *docEnv, args []string) {
	data, err := os.ReadFile("../../docs/kubernetes.md")
	if err != nil {
		t.Fatal(err)
	}
	var script []string
	for _, l := range strings.Split(string(data), "\n") {
		l = strings.TrimPrefix(l, "    ")
		if l == "mkdir -p ~/clockwatch-overlay" || len(script) > 0 {
			script = append(script, l)
		}
		if l == "EOF" && len(script) > 0 {
			break
		}
	}
	if len(script) < 3 || script[len(script)-1] != "EOF" {
		t.Fatalf("docs/kubernetes.md: no overlay block from mkdir -p ~/clockwatch-overlay to EOF (got %q)", script)
	}
	r := e.run(t, 20*time.Second, "../..", "sh", "-ec", strings.Join(script, "\n"))
	want(t, "the overlay's script", r, []int{0})
	overlay := filepath.Join(e.dir, "clockwatch-overlay")
	k, err := os.ReadFile(filepath.Join(overlay, "kustomization.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	var base string
	for _, l := range strings.Split(string(k), "\n") {
		if b, ok := strings.CutPrefix(strings.TrimSpace(l), "- "); ok && !strings.Contains(b, ":") {
			base = b
		}
	}
	if _, err := os.Stat(filepath.Join(overlay, base, "kustomization.yaml")); base == "" || err != nil {
		t.Errorf("the overlay's resource %q is not deploy/kubernetes relative to it (%v):\n%s", base, err, k)
	}
	if !strings.Contains(string(k), "newName: registry.example/clockwatch") {
		t.Errorf("the overlay does not name the registry's copy:\n%s", k)
	}
}

// crossBuild runs the image's build line from the repository's root with
// -o a temporary file (not the checkout's dist/): it writes an arm64 ELF
// executable. On a cold build cache it takes about 40 s (the standard
// library for arm64 with -trimpath); then well under a second.
func crossBuild(t *testing.T, e *docEnv, args []string) {
	env, argv := os.Environ(), args
	for len(argv) > 0 && envAssign.MatchString(argv[0]) {
		env, argv = append(env, argv[0]), argv[1:]
	}
	argv = slices.Clone(argv)
	out := filepath.Join(t.TempDir(), "clockwatch")
	i := slices.Index(argv, "-o")
	if i < 0 || argv[0] != "go" {
		t.Fatalf("%q: want go build ... -o FILE", args)
	}
	argv[i+1] = out
	r := runIn(t, 4*time.Minute, "../..", env, argv...)
	want(t, strings.Join(args, " "), r, []int{0})
	f, err := elf.Open(out)
	if err != nil {
		t.Fatalf("%s wrote no ELF file: %v; output:\n%s", strings.Join(args, " "), err, r.out)
	}
	defer f.Close()
	if f.Machine != elf.EM_AARCH64 {
		t.Errorf("%s wrote a %v executable, want %v", strings.Join(args, " "), f.Machine, elf.EM_AARCH64)
	}
}

// mixin generates the mixin's rules with a configuration into a directory
// of the test's (-out DIR, as the docs say: never the checkout).
func mixin(t *testing.T, e *docEnv, args []string) {
	out := t.TempDir()
	// This process's environment: HOME is the go command's build and
	// module caches.
	r := runIn(t, 50*time.Second, "../..", os.Environ(), "go", "run", "./mixin/cmd/mixin", "-out", out, "-config", `{"showMultiCluster": true}`)
	want(t, "go run ./mixin/cmd/mixin -out DIR -config {...}", r, []int{0})
	files, _ := filepath.Glob(filepath.Join(out, "*", "*"))
	if len(files) == 0 {
		t.Errorf("go run ./mixin/cmd/mixin -out %s wrote nothing there; output:\n%s", out, r.out)
	}
}

// The tools below come from scripts/deps.d (curl 00-base.pkgs, socat and
// python3 50-stepdown.pkgs); testtool.Require fails without one under
// CI=true and skips elsewhere.

// curlMetrics scrapes the daemon as install.md does, at its loopback port.
func curlMetrics(t *testing.T, e *docEnv, args []string) {
	testtool.Require(t, "curl")
	r := e.run(t, 20*time.Second, e.dir, "sh", "-c", "curl -s http://"+e.d.Addr+"/metrics | grep ^clockwatch_")
	want(t, "curl | grep", r, []int{0}, "clockwatch_build_info{")
}

// socat connects to the daemon's socket as the protocol doc does: the
// hello comes first.
func socat(t *testing.T, e *docEnv, args []string) {
	testtool.Require(t, "socat")
	// socat - ends when its standard input does: the terminal's stays
	// open, here a pipe for 1.5s.
	r := e.run(t, 10*time.Second, e.dir, "sh", "-c", `sleep 1.5 | socat - "UNIX-CONNECT:$0"`, e.d.StepdownSocket())
	if !strings.HasPrefix(r.out, `{"type":"hello","version":1,"state":"ok"`) {
		t.Errorf("socat: want the hello first; output:\n%s", r.out)
	}
}

// boundedtime reads the daemon's bounded-time segment with the Python
// reader for 1s (the docs watch for 10).
func boundedtime(t *testing.T, e *docEnv, args []string) {
	testtool.Require(t, "python3")
	r := e.run(t, 20*time.Second, e.dir, "python3", filepath.Join(repoRoot(t), "examples/boundedtime/boundedtime.py"),
		filepath.Join(e.d.RuntimeDir, "clockbound", "shm0"), "--watch", "1")
	// Exit 1: the status is not synchronised (no time daemon disciplines
	// this host's clock), 0 when one does.
	want(t, "boundedtime.py", r, []int{0, 1}, "status=", "earliest_ns=", "bound_ns=")
}

func repoRoot(t *testing.T) string {
	t.Helper()
	root, err := filepath.Abs("../..")
	if err != nil {
		t.Fatal(err)
	}
	return root
}

// docConfig writes the test's configuration: chrony off (no host socket is
// dialled), ptp4l off, timesyncd on a bus that does not exist, and the two
// triggers that hold an undisciplined host in stepdown off, so that the
// state is ok and drills run (docs/install.md, "Hosts without a time
// daemon").
func docConfig(t *testing.T, dir string) string {
	t.Helper()
	f := filepath.Join(dir, "clockwatch.yml")
	conf := "chrony:\n  enabled: false\nptp:\n  enabled: false\ntimesyncd:\n  address: unix:path=" + filepath.Join(dir, "no-system-bus") + "\n" +
		"stepdown:\n  triggers:\n    unsynchronized: {enabled: false}\n    error_bound: {enabled: false}\n"
	if err := os.WriteFile(f, []byte(conf), 0o644); err != nil {
		t.Fatal(err)
	}
	return f
}

// TestDocumentedCommandsRun runs every documented command that can run on
// this machine, each in a throwaway directory against a daemon of its own
// (loopback port, temporary runtime and state directories), and asserts its
// exit code and output; notRunnable says why each other one cannot. A
// documented command in neither table fails the test: a new one must be
// classified.
func TestDocumentedCommandsRun(t *testing.T) {
	t.Parallel()
	start := time.Now()
	cmds := documentedCommands(t)
	shipped, err := os.ReadFile("../../packaging/clockwatch.yml")
	if err != nil {
		t.Fatal(err)
	}
	journal, err := os.ReadFile("../../internal/journal/testdata/print.jsonl")
	if err != nil {
		t.Fatal(err)
	}
	usedMatch := map[string]bool{}
	var ran, listed int
	t.Run("run", func(t *testing.T) {
		for _, c := range cmds {
			run, ok := runnable[c.key]
			if !ok {
				why, match := classify(c.key)
				if why == "" {
					t.Errorf("%s: %q is neither run (runnable) nor listed with why it cannot run (notRunnable)", strings.Join(c.where, ", "), c.key)
					continue
				}
				usedMatch[match] = true
				listed++
				t.Logf("not run: %s (%s): %s", c.key, strings.Join(c.where, ", "), why)
				continue
			}
			ran++
			args := shellWords(strings.TrimPrefix(c.key, "sudo "))
			t.Run(c.key, func(t *testing.T) {
				t.Parallel()
				dir := t.TempDir()
				e := &docEnv{dir: dir, conf: docConfig(t, dir), etcConf: filepath.Join(dir, "etc-clockwatch.yml")}
				if err := os.WriteFile(e.etcConf, shipped, 0o644); err != nil {
					t.Fatal(err)
				}
				// The journal holds five events of 2026-11-30
				// (internal/journal/testdata), so that events has some to show.
				state := t.TempDir()
				if err := os.WriteFile(filepath.Join(state, "events.jsonl"), journal, 0o640); err != nil {
					t.Fatal(err)
				}
				e.d = daemontest.Start(t, binary, daemontest.Options{StateDir: state, Args: []string{"--config.file=" + e.conf}})
				e.waitStarted(t)
				run(t, e, args)
				if t.Failed() {
					t.Logf("shown at %s; daemon log:\n%s", strings.Join(c.where, ", "), e.d.Log())
				}
			})
		}
	})
	keys := map[string]bool{}
	for _, c := range cmds {
		keys[c.key] = true
	}
	for k := range runnable {
		if !keys[k] {
			t.Errorf("runnable has %q, which no document shows any more", k)
		}
	}
	for _, n := range notRunnable {
		if !usedMatch[n.match] {
			t.Errorf("notRunnable has %q, which matches no documented command any more", n.match)
		}
	}
	t.Logf("%d documented commands: %d run, %d listed as not runnable here, in %v", len(cmds), ran, listed, time.Since(start).Round(time.Millisecond))
}

// TestShellProgram: the program of a shell line, past sudo, cd and
// assignments; none for output, configuration and unit lines.
func TestShellProgram(t *testing.T) {
	t.Parallel()
	tests := []struct{ line, want string }{
		{"sudo systemctl reload clockwatch", "systemctl"},
		{"cd examples/redislock && GOWORK=off go run ./cmd/replay -locks", "go"},
		{`(cd "$CLOCKWATCH/cmd/clockwatch-vet" && GOWORK=off go install .)`, "go"},
		{`"$CLOCKWATCH/bin/clockwatch-vet" -fix ./...`, "$CLOCKWATCH/bin/clockwatch-vet"},
		{"scripts/test-deps.sh", "scripts/test-deps.sh"},
		{"curl -s http://localhost:9847/metrics | grep ^clockwatch_", "curl"},
		{`{"type":"hello","version":1}`, ""},
		{"naive:", ""},
		{"ExecStart=/usr/bin/clockwatch --config.file=/etc/clockwatch/clockwatch.yml", ""},
		{`level=WARN msg="no time daemon answers"`, ""},
		{"/etc/clockwatch/clockwatch.yml:3: unknown key", ""},
		{"[Service]", ""},
		{"", ""},
	}
	for _, tt := range tests {
		if got := shellProgram(tt.line); got != tt.want {
			t.Errorf("shellProgram(%q) = %q, want %q", tt.line, got, tt.want)
		}
	}
}
