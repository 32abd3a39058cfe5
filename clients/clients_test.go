package clients

import (
	"bufio"
	"context"
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/clockwatch/clockwatch/internal/daemontest"
	"github.com/clockwatch/clockwatch/internal/testtool"
	"github.com/clockwatch/clockwatch/stepdown"
)

// startClockwatch runs a real clockwatch with its stepdown socket in a
// temporary runtime directory and a short heartbeat, and a second one that
// the first measures as its peer (and the other way round), and returns the
// environment a client's tests read: the first one's socket and metrics URL,
// the peer's name as the first knows it and the peer's own socket.
func startClockwatch(t *testing.T) []string {
	t.Helper()
	bin := daemontest.Build(t)
	portA, portB := freeUDPPort(t), freeUDPPort(t)
	a := startDaemon(t, bin, portA, portB)
	b := startDaemon(t, bin, portB, portA)
	return []string{"CLOCKWATCH_STEPDOWN_SOCKET=" + a.StepdownSocket(), "CLOCKWATCH_METRICS_URL=http://" + a.Addr + "/metrics",
		"CLOCKWATCH_PEER=" + fmt.Sprintf("127.0.0.1:%d", portB), "CLOCKWATCH_PEER_SOCKET=" + b.StepdownSocket()}
}

// startDaemon runs a clockwatch answering its peers on 127.0.0.1:port and
// measuring the one on peer every second.
func startDaemon(t *testing.T, bin string, port, peer int) *daemontest.Daemon {
	t.Helper()
	confFile := filepath.Join(t.TempDir(), "clockwatch.yml")
	// No time daemon disciplines this machine's clock for the test: the
	// kernel may say unsynchronised with a 16 s error bound. Those triggers
	// are off so that the state is ok and only the tests' drills step down.
	conf := "chrony: {enabled: false}\nstepdown:\n  heartbeat: 200ms\n  triggers:\n    error_bound: {enabled: false}\n    unsynchronized: {enabled: false}\n" +
		fmt.Sprintf("peers: {listen: \"127.0.0.1:%d\", static: [\"127.0.0.1:%d\"], interval: 1s, exchanges: 1}\n", port, peer)
	if err := os.WriteFile(confFile, []byte(conf), 0o600); err != nil {
		t.Fatal(err)
	}
	d := daemontest.Start(t, bin, daemontest.Options{Args: []string{"--config.file=" + confFile}})
	deadline := time.Now().Add(30 * time.Second)
	for {
		if _, err := os.Stat(d.StepdownSocket()); err == nil {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("no stepdown socket at %s within 30s:\n%s", d.StepdownSocket(), d.Log())
		}
		time.Sleep(20 * time.Millisecond)
	}
	return d
}

// freeUDPPort returns a loopback UDP port free a moment ago.
func freeUDPPort(t *testing.T) int {
	t.Helper()
	c, err := net.ListenPacket("udp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	return c.LocalAddr().(*net.UDPAddr).Port
}

// run runs a command with env added, failing the test with its output.
// A command that hangs is killed after 5 minutes.
func run(t *testing.T, env []string, dir, name string, args ...string) string {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, name, args...)
	cmd.Dir = dir
	cmd.Env = append(os.Environ(), env...)
	out, err := cmd.CombinedOutput()
	if err != nil {
		t.Fatalf("%s %s: %v\n%s", name, strings.Join(args, " "), err, out)
	}
	return string(out)
}

// TestPythonPackage installs clients/python into a new virtual environment
// the way a user without network access would (Debian's setuptools and
// wheel, no index), type-checks it with mypy --strict, and runs its unittest
// suite against a real clockwatch.
func TestPythonPackage(t *testing.T) {
	t.Parallel()
	testtool.Short(t)
	if _, err := os.Stat("/usr/bin/python3"); err != nil {
		t.Fatalf("no Debian python3 (python3-venv, -setuptools and -wheel: scripts/deps.d): %v", err)
	}
	src, err := filepath.Abs("python")
	if err != nil {
		t.Fatal(err)
	}
	// The README's offline install, run as written from a directory that
	// holds a copy of the sources at ./clients/python (setuptools writes
	// build/ and *.egg-info next to them), with a python3 first in PATH
	// that is not Debian's (a pyenv build, as on these machines: no wheel
	// there, so "invalid command 'bdist_wheel'"): the commands must not
	// depend on which python3 PATH finds.
	work := t.TempDir()
	run(t, nil, "", "mkdir", "-p", filepath.Join(work, "clients"))
	run(t, nil, "", "cp", "-r", src, filepath.Join(work, "clients", "python"))
	shims := t.TempDir()
	testtool.WriteExecutable(t, filepath.Join(shims, "python3"), "#!/bin/sh\necho \"not Debian's python3: the README must name /usr/bin/python3\" >&2\nexit 1\n")
	install := readmeBlock(t, filepath.Join(src, "README.md"), "Offline")
	run(t, []string{"PATH=" + shims + ":" + os.Getenv("PATH"), "PIP_DISABLE_PIP_VERSION_CHECK=1"}, work, "/bin/sh", "-ec", install)
	venv := filepath.Join(work, "venv")
	out := run(t, nil, "", filepath.Join(venv, "bin", "python"), "-c", "import clockwatch_stepdown, os; print(os.path.dirname(clockwatch_stepdown.__file__))")
	if !strings.HasPrefix(strings.TrimSpace(out), venv) {
		t.Fatalf("clockwatch_stepdown imported from %s, not from the virtual environment", out)
	}
	if _, err := os.Stat(filepath.Join(strings.TrimSpace(out), "py.typed")); err != nil {
		t.Errorf("the installed package is not marked typed: %v", err)
	}

	// Typed: the sources pass mypy --strict, and an application's code
	// type-checks against the installed package (py.typed is honoured).
	mypy := testtool.Require(t, "mypy")
	run(t, nil, src, mypy, "--strict", "--no-incremental", "src")
	app := filepath.Join(t.TempDir(), "app.py")
	if err := os.WriteFile(app, []byte("import clockwatch_stepdown as cs\n\nev: cs.Event = cs.parse(b'{\"type\":\"hello\",\"state\":\"ok\"}')\nok: bool = ev.trusted\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	run(t, nil, "", mypy, "--strict", "--no-incremental", "--python-executable", filepath.Join(venv, "bin", "python"), app)

	env := startClockwatch(t)
	// The tests run from outside the source tree so that they import the
	// installed package.
	out = run(t, env, t.TempDir(), filepath.Join(venv, "bin", "python"), "-m", "unittest", "discover", "-v", "-s", filepath.Join(src, "tests"), "-t", filepath.Join(src, "tests"))
	if strings.Contains(out, "skipped") {
		t.Errorf("python tests skipped something:\n%s", out)
	}
	t.Log(out)
}

// readmeBlock returns the first indented code block after the paragraph
// that begins with after, as a shell script.
func readmeBlock(t *testing.T, readme, after string) string {
	t.Helper()
	data, err := os.ReadFile(readme)
	if err != nil {
		t.Fatal(err)
	}
	var block []string
	found := false
	for _, l := range strings.Split(string(data), "\n") {
		switch {
		case !found:
			found = strings.HasPrefix(l, after)
		case strings.HasPrefix(l, "    "):
			block = append(block, strings.TrimPrefix(l, "    "))
		case len(block) > 0:
			return strings.Join(block, "\n") + "\n"
		}
	}
	t.Fatalf("%s: no indented block after a paragraph beginning %q", readme, after)
	return ""
}

// TestJavaLibrary builds clients/java with its script (javac and jar, as
// its users without Maven access would) and runs its JUnit-free tests,
// README example included, against a real clockwatch.
func TestJavaLibrary(t *testing.T) {
	t.Parallel()
	testtool.Short(t)
	testtool.Require(t, "javac")
	testtool.Require(t, "jar")
	src, err := filepath.Abs("java")
	if err != nil {
		t.Fatal(err)
	}
	// Run from elsewhere with a relative BUILD_DIR, as the README's
	// ./clients/java/build.sh runs from the top directory: the path it
	// prints first is where the jar is (before the fix it printed
	// build/clockwatch-stepdown.jar, relative to clients/java).
	caller := t.TempDir()
	env := append(startClockwatch(t), "BUILD_DIR=out")
	out := run(t, env, caller, filepath.Join(src, "build.sh"), "test")
	if strings.Contains(out, "FAIL") || strings.Count(out, "\nok   ") < 5 {
		t.Errorf("java tests:\n%s", out)
	}
	jar, _, _ := strings.Cut(out, "\n")
	if want := filepath.Join(caller, "out", "clockwatch-stepdown.jar"); jar != want {
		t.Errorf("build.sh printed %q first, want the jar's path %s", jar, want)
	}
	if _, err := os.Stat(jar); err != nil {
		t.Errorf("the jar build.sh names: %v", err)
	}
	t.Log(out)
}

// TestGoReadmeExample copies stepdown/README.md's program into a file of a
// new module, as a user would, builds it outside the workspace against the
// client module (a replace, as before a release), and runs it against a real
// clockwatch: it holds the lock, releases it on a drill's stepdown, takes it
// again on the resume, and releases it again on a second drill.
func TestGoReadmeExample(t *testing.T) {
	t.Parallel()
	testtool.Short(t)
	readme, err := os.ReadFile("../stepdown/README.md")
	if err != nil {
		t.Fatal(err)
	}
	m := regexp.MustCompile("(?s)## Release your lock\n.*?```go\n(.*?)```").FindSubmatch(readme)
	if m == nil {
		t.Fatal("stepdown/README.md has no Go block under \"Release your lock\"")
	}
	client, err := filepath.Abs("../stepdown")
	if err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	mod := "module example.com/holder\n\ngo 1.24\n\nrequire github.com/clockwatch/clockwatch/stepdown v0.1.0\n\nreplace github.com/clockwatch/clockwatch/stepdown => " + client + "\n"
	for name, text := range map[string][]byte{"main.go": m[1], "go.mod": []byte(mod)} {
		if err := os.WriteFile(filepath.Join(dir, name), text, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	bin := filepath.Join(dir, "holder")
	run(t, []string{"GOWORK=off", "GOFLAGS=-mod=mod"}, dir, "go", "build", "-o", bin, ".")

	env := startClockwatch(t)
	socket := strings.TrimPrefix(env[0], "CLOCKWATCH_STEPDOWN_SOCKET=")
	cmd := exec.Command(bin)
	cmd.Env = append(os.Environ(), append(env, "TMPDIR="+dir)...)
	out, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	defer cmd.Process.Kill()
	lines := make(chan string, 16)
	go func() {
		sc := bufio.NewScanner(out)
		for sc.Scan() {
			lines <- sc.Text()
		}
		close(lines)
	}()
	expect := func(want string) {
		t.Helper()
		select {
		case got := <-lines:
			if got != want {
				t.Fatalf("the README's program printed %q, want %q", got, want)
			}
		case <-time.After(20 * time.Second):
			t.Fatalf("the README's program did not print %q within 20s", want)
		}
	}
	drill := func(reason stepdown.Reason) {
		t.Helper()
		c, err := stepdown.Dial(t.Context(), socket)
		if err != nil {
			t.Fatal(err)
		}
		defer c.Close()
		if err := c.Send(stepdown.Message{Type: stepdown.TypeDrill, Reason: reason, HoldSeconds: 0.3}); err != nil {
			t.Fatal(err)
		}
	}
	expect("holding the lock, turn 1")
	drill(stepdown.ReasonStep)
	expect("released the lock: step")
	expect("holding the lock, turn 2")
	drill(stepdown.ReasonSuspend)
	expect("released the lock: suspend")
	done := make(chan error, 1)
	go func() { done <- cmd.Wait() }()
	select {
	case err := <-done:
		if err != nil {
			t.Errorf("the README's program exited with %v", err)
		}
	case <-time.After(20 * time.Second):
		t.Error("the README's program did not exit after its second turn")
	}
}
