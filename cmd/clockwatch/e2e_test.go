//go:build linux

package main

import (
	"bufio"
	"bytes"
	"context"
	"flag"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"sort"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/clockwatch/clockwatch/internal/testtool"
)

var update = flag.Bool("update", false, "rewrite the golden files in testdata/")

// binary is the clockwatch binary the end-to-end tests run, built once.
var binary string

func TestMain(m *testing.M) {
	flag.Parse()
	dir, err := os.MkdirTemp("", "clockwatch-e2e-")
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	binary = filepath.Join(dir, "clockwatch")
	build := exec.Command("go", "build", "-o", binary, ".")
	build.Stdout, build.Stderr = os.Stderr, os.Stderr
	if err := build.Run(); err != nil {
		fmt.Fprintln(os.Stderr, "building clockwatch:", err)
		os.Exit(1)
	}
	code := m.Run()
	os.RemoveAll(dir)
	os.Exit(code)
}

// proc is a running clockwatch daemon.
type proc struct {
	cmd  *exec.Cmd
	addr string // host:port it serves HTTP on

	mu  sync.Mutex
	log bytes.Buffer
}

// Log returns what the daemon logged so far.
func (p *proc) Log() string {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.log.String()
}

var listeningRE = regexp.MustCompile(`msg="Listening on" address=(\S+)`)

// startDaemon runs the binary on a free loopback port and waits until it
// serves HTTP. It is stopped when the test ends.
func startDaemon(t *testing.T, args ...string) *proc {
	t.Helper()
	p := &proc{}
	p.cmd = exec.Command(binary, append([]string{"--web.listen-address=127.0.0.1:0"}, args...)...)
	// The journal goes where systemd's StateDirectory= would put it: never
	// the machine's /var/lib/clockwatch.
	p.cmd.Env = append(os.Environ(), "STATE_DIRECTORY="+t.TempDir(), "RUNTIME_DIRECTORY="+t.TempDir())
	stderr, err := p.cmd.StderrPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := p.cmd.Start(); err != nil {
		t.Fatal(err)
	}
	addrc := make(chan string, 1)
	go func() {
		sc := bufio.NewScanner(stderr)
		for sc.Scan() {
			p.mu.Lock()
			p.log.WriteString(sc.Text() + "\n")
			p.mu.Unlock()
			if m := listeningRE.FindStringSubmatch(sc.Text()); m != nil {
				select {
				case addrc <- m[1]:
				default:
				}
			}
		}
	}()
	t.Cleanup(func() {
		_ = p.cmd.Process.Signal(syscall.SIGTERM)
		done := make(chan error, 1)
		go func() { done <- p.cmd.Wait() }()
		select {
		case err := <-done:
			if err != nil {
				t.Errorf("clockwatch exited with %v on SIGTERM; log:\n%s", err, p.Log())
			}
		case <-time.After(10 * time.Second):
			_ = p.cmd.Process.Kill()
			t.Errorf("clockwatch did not stop within 10s of SIGTERM")
		}
	})
	select {
	case p.addr = <-addrc:
	case <-time.After(20 * time.Second):
		t.Fatalf("clockwatch did not start listening; log:\n%s", p.Log())
	}
	return p
}

func (p *proc) get(t *testing.T, path string, header ...string) (*http.Response, string) {
	t.Helper()
	req, err := http.NewRequest(http.MethodGet, "http://"+p.addr+path, nil)
	if err != nil {
		t.Fatal(err)
	}
	for i := 0; i+1 < len(header); i += 2 {
		req.Header.Set(header[i], header[i+1])
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatalf("GET %s: %v", path, err)
	}
	defer resp.Body.Close()
	body, err := io.ReadAll(resp.Body)
	if err != nil {
		t.Fatal(err)
	}
	return resp, string(body)
}

// waitMetric scrapes until the series' value satisfies ok, and returns
// that scrape.
func (p *proc) waitMetric(t *testing.T, series string, ok func(string) bool) string {
	t.Helper()
	deadline := time.Now().Add(15 * time.Second)
	for {
		_, body := p.get(t, "/metrics")
		if v, found := metricValue(body, series); found && ok(v) {
			return body
		}
		if time.Now().After(deadline) {
			t.Fatalf("%s never reached the expected value; log:\n%s", series, p.Log())
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// metric returns the value of a sample line "name{labels} value" as text.
func metricValue(body, series string) (string, bool) {
	for _, line := range strings.Split(body, "\n") {
		if v, ok := strings.CutPrefix(line, series+" "); ok {
			return v, true
		}
	}
	return "", false
}

// mask keeps the shape of an exposition (HELP, TYPE, series names and
// labels) and hides what depends on the host: sample values, build labels,
// and the Go runtime and process families.
func mask(body string) string {
	buildLabels := regexp.MustCompile(`(branch|goversion|revision|tags|version|goarch|goos)="[^"]*"`)
	var out []string
	for _, line := range strings.Split(strings.TrimSpace(body), "\n") {
		fields := strings.Fields(line)
		name := fields[0]
		if name == "#" && len(fields) > 2 {
			name = fields[2]
		}
		if strings.HasPrefix(name, "go_") || strings.HasPrefix(name, "process_") || strings.HasPrefix(name, "promhttp_") {
			continue
		}
		if !strings.HasPrefix(line, "#") {
			line = line[:strings.LastIndexByte(line, ' ')] + " <value>"
			line = buildLabels.ReplaceAllString(line, `$1="<masked>"`)
		}
		out = append(out, line)
	}
	return strings.Join(out, "\n") + "\n"
}

// noChronyConfig points the chrony poller at a socket that does not exist,
// the audit at a fixture and timesyncd at a bus that does not exist, so the
// golden output is the same whether or not chrony or timesyncd run here (and
// ptp4l off, whether or not this host runs one).
func noChronyConfig(t *testing.T) string {
	t.Helper()
	dir := t.TempDir()
	f := filepath.Join(dir, "clockwatch.yml")
	conf := "chrony:\n  address: " + filepath.Join(dir, "no-chronyd.sock") + "\n  conf_path: testdata/chrony.conf\nptp:\n  enabled: false\n" +
		"timesyncd:\n  address: unix:path=" + filepath.Join(dir, "no-system-bus") + "\n"
	if err := os.WriteFile(f, []byte(conf), 0o644); err != nil {
		t.Fatal(err)
	}
	return "--config.file=" + f
}

func TestMetricsGolden(t *testing.T) {
	t.Parallel()
	p := startDaemon(t, noChronyConfig(t))
	p.waitMetric(t, "clockwatch_chrony_polls_total", func(v string) bool { return v != "0" })
	resp, body := p.get(t, "/metrics")
	if resp.StatusCode != http.StatusOK {
		t.Fatalf("GET /metrics: %s", resp.Status)
	}
	for _, want := range []string{"process_resident_memory_bytes", "go_goroutines", "clockwatch_build_info"} {
		if !strings.Contains(body, "\n"+want) {
			t.Errorf("/metrics lacks %s", want)
		}
	}
	if v, _ := metricValue(body, "clockwatch_clock_up"); v != "1" {
		t.Errorf("clockwatch_clock_up = %q, want 1", v)
	}
	if v, _ := metricValue(body, "clockwatch_kernel_up"); v != "1" {
		t.Errorf("clockwatch_kernel_up = %q, want 1", v)
	}
	got := mask(body)
	golden := filepath.Join("testdata", "metrics.golden")
	if *update {
		if err := os.WriteFile(golden, []byte(got), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	want, err := os.ReadFile(golden)
	if err != nil {
		t.Fatalf("%v (run go test -update)", err)
	}
	if diff := cmp.Diff(string(want), got); diff != "" {
		t.Errorf("/metrics differs from %s (-want +got):\n%s", golden, diff)
	}
}

func TestPromtoolCheckMetrics(t *testing.T) {
	t.Parallel()
	promtool := testtool.Require(t, "promtool")
	p := startDaemon(t)
	_, body := p.get(t, "/metrics")
	cmd := exec.Command(promtool, "check", "metrics")
	cmd.Stdin = strings.NewReader(body)
	out, err := cmd.CombinedOutput()
	if err != nil || len(bytes.TrimSpace(out)) > 0 {
		t.Errorf("promtool check metrics: %v\n%s", err, out)
	}
}

func TestOpenMetricsAndEndpoints(t *testing.T) {
	t.Parallel()
	p := startDaemon(t)
	resp, body := p.get(t, "/metrics", "Accept", "application/openmetrics-text; version=1.0.0")
	if ct := resp.Header.Get("Content-Type"); !strings.HasPrefix(ct, "application/openmetrics-text") {
		t.Errorf("Content-Type = %q, want OpenMetrics", ct)
	}
	if !strings.HasSuffix(strings.TrimSpace(body), "# EOF") {
		t.Errorf("OpenMetrics body does not end with # EOF")
	}
	if resp, body := p.get(t, "/healthz"); resp.StatusCode != 200 || strings.TrimSpace(body) != "ok" {
		t.Errorf("/healthz = %s %q", resp.Status, body)
	}
	if resp, body := p.get(t, "/"); resp.StatusCode != 200 || !strings.Contains(body, `href="/metrics"`) {
		t.Errorf("landing page = %s, links to /metrics: %v", resp.Status, strings.Contains(body, "/metrics"))
	}
}

// docRow is one row of a metrics table in docs/metrics.md.
type docRow struct{ typ, meaning string }

func readMetricsDoc(t *testing.T) map[string]docRow {
	t.Helper()
	data, err := os.ReadFile("../../docs/metrics.md")
	if err != nil {
		t.Fatal(err)
	}
	rows := map[string]docRow{}
	for i, line := range strings.Split(string(data), "\n") {
		cells := strings.Split(line, "|")
		if len(cells) < 7 || !strings.HasPrefix(strings.TrimSpace(cells[1]), "clockwatch_") {
			continue
		}
		name := strings.TrimSpace(cells[1])
		if _, dup := rows[name]; dup {
			t.Errorf("docs/metrics.md:%d: %s listed twice", i+1, name)
		}
		rows[name] = docRow{typ: strings.TrimSpace(cells[2]), meaning: strings.TrimSpace(cells[5])}
	}
	return rows
}

// Every metric family the daemon exports is in docs/metrics.md with its
// type, and every documented metric is exported unless it says when it is not.
func TestMetricsDocumented(t *testing.T) {
	t.Parallel()
	p := startDaemon(t, noChronyConfig(t))
	// Wait for the first chrony poll and the announcer's first
	// announcement (it leaves "unknown" once the clocks are sampled).
	p.waitMetric(t, "clockwatch_chrony_polls_total", func(v string) bool { return v != "0" })
	body := p.waitMetric(t, `clockwatch_stepdown_state{state="unknown"}`, func(v string) bool { return v == "0" })
	exported := map[string]string{}
	for _, line := range strings.Split(body, "\n") {
		if f := strings.Fields(line); len(f) == 4 && f[1] == "TYPE" && strings.HasPrefix(f[2], "clockwatch_") {
			exported[f[2]] = f[3]
		}
	}
	doc := readMetricsDoc(t)
	var problems []string
	for name, typ := range exported {
		row, ok := doc[name]
		switch {
		case !ok:
			problems = append(problems, fmt.Sprintf("%s (%s) is exported but not in docs/metrics.md", name, typ))
		case row.typ != typ:
			problems = append(problems, fmt.Sprintf("%s is a %s, docs/metrics.md says %s", name, typ, row.typ))
		}
	}
	for name, row := range doc {
		if _, ok := exported[name]; !ok && !strings.HasPrefix(row.meaning, "Only when") {
			problems = append(problems, fmt.Sprintf("%s is in docs/metrics.md but not exported (start its meaning with \"Only when\" if that is expected)", name))
		}
	}
	sort.Strings(problems)
	for _, p := range problems {
		t.Error(p)
	}
}

func TestReloadKeepsConfigOnBadFile(t *testing.T) {
	t.Parallel()
	cfg := filepath.Join(t.TempDir(), "clockwatch.yml")
	write := func(s string) {
		if err := os.WriteFile(cfg, []byte(s), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	write("clock:\n  sample_interval: 200ms\n")
	p := startDaemon(t, "--config.file="+cfg)
	waitFor := func(want string) {
		t.Helper()
		p.waitMetric(t, "clockwatch_config_last_reload_successful", func(v string) bool { return v == want })
	}
	waitFor("1")
	write("clock:\n  sample_interval: -1s\n")
	if err := p.cmd.Process.Signal(syscall.SIGHUP); err != nil {
		t.Fatal(err)
	}
	waitFor("0")
	// The metric may change before the log line has been read from the
	// daemon's stderr: give the reader a moment.
	for deadline := time.Now().Add(5 * time.Second); time.Now().Before(deadline) && !strings.Contains(p.Log(), "clock.sample_interval: must be"); {
		time.Sleep(10 * time.Millisecond)
	}
	if !strings.Contains(p.Log(), "clock.sample_interval: must be between 1ms and 1m, got -1s") {
		t.Errorf("the log does not say what is wrong with the file:\n%s", p.Log())
	}
	write("clock:\n  sample_interval: 50ms\n")
	if err := p.cmd.Process.Signal(syscall.SIGHUP); err != nil {
		t.Fatal(err)
	}
	waitFor("1")
	// The stepdown socket lives under RUNTIME_DIRECTORY here; a reload that
	// leaves the stepdown section alone must not claim it changed.
	if strings.Contains(p.Log(), "take effect at the next restart") {
		t.Errorf("a reload without stepdown changes asked for a restart:\n%s", p.Log())
	}
}

// TestReloadRefusesFIFOConfig: a SIGHUP with a FIFO as the configuration
// hung the reload, and SIGTERM no longer ended the daemon (issue 32, item
// 6). The reload fails at once, naming the file, and the cleanup's SIGTERM
// must end the daemon within its 10 s.
func TestReloadRefusesFIFOConfig(t *testing.T) {
	t.Parallel()
	cfg := filepath.Join(t.TempDir(), "clockwatch.yml")
	if err := os.WriteFile(cfg, []byte("clock:\n  sample_interval: 200ms\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	p := startDaemon(t, "--config.file="+cfg)
	p.waitMetric(t, "clockwatch_config_last_reload_successful", func(v string) bool { return v == "1" })
	if err := os.Remove(cfg); err != nil {
		t.Fatal(err)
	}
	if err := syscall.Mkfifo(cfg, 0o644); err != nil {
		t.Fatal(err)
	}
	if err := p.cmd.Process.Signal(syscall.SIGHUP); err != nil {
		t.Fatal(err)
	}
	p.waitMetric(t, "clockwatch_config_last_reload_successful", func(v string) bool { return v == "0" })
	want := cfg + " is a FIFO, not a regular file"
	for deadline := time.Now().Add(5 * time.Second); time.Now().Before(deadline) && !strings.Contains(p.Log(), want); {
		time.Sleep(10 * time.Millisecond)
	}
	if !strings.Contains(p.Log(), want) {
		t.Errorf("the log does not say %q:\n%s", want, p.Log())
	}
}

// TestOpenRefusesVMClockFIFO: a FIFO as the VMClock device kept the state
// "unknown/starting" for ever and SIGTERM was ignored (issue 32, item 6):
// the open blocked the poller. The open fails at once, naming the FIFO, once
// in the log however many polls fail; the state leaves "unknown"; the
// cleanup's SIGTERM must end the daemon.
func TestOpenRefusesVMClockFIFO(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	fifo := filepath.Join(dir, "vmclock0")
	if err := syscall.Mkfifo(fifo, 0o600); err != nil {
		t.Fatal(err)
	}
	cfg := strings.TrimPrefix(noChronyConfig(t), "--config.file=")
	b, err := os.ReadFile(cfg)
	if err != nil {
		t.Fatal(err)
	}
	b = append(b, "vmclock:\n  mode: \"on\"\n  path: "+fifo+"\n  poll_interval: 10ms\n"...)
	if err := os.WriteFile(cfg, b, 0o644); err != nil {
		t.Fatal(err)
	}
	p := startDaemon(t, "--config.file="+cfg)
	p.waitMetric(t, "clockwatch_vmclock_poll_failures_total", func(v string) bool { n, _ := strconv.Atoi(v); return n >= 50 })
	p.waitMetric(t, `clockwatch_stepdown_state{state="unknown"}`, func(v string) bool { return v == "0" })
	if n := strings.Count(p.Log(), "cannot open the VMClock device"); n != 1 || !strings.Contains(p.Log(), fifo+" is a FIFO") {
		t.Errorf("%d log lines about the device after 50 failed polls, want one naming the FIFO:\n%s", n, p.Log())
	}
}

func TestCLI(t *testing.T) {
	t.Parallel()
	bad := filepath.Join(t.TempDir(), "bad.yml")
	if err := os.WriteFile(bad, []byte("clock:\n  sampel_interval: 1s\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	fifo := filepath.Join(t.TempDir(), "fifo.yml")
	if err := syscall.Mkfifo(fifo, 0o644); err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		name     string
		args     []string
		wantCode []int
		wantOut  string
	}{
		{"config check without file", []string{"--config.check"}, []int{0}, "configuration is valid"},
		{"config check of example", []string{"--config.file=../../packaging/clockwatch.yml", "--config.check"}, []int{0}, "configuration is valid"},
		{"config check of a bad file", []string{"--config.file=" + bad, "--config.check"}, []int{1}, bad + `:2: unknown key "sampel_interval"`},
		{"daemon refuses a bad file", []string{"--config.file=" + bad}, []int{1}, "cannot start with this configuration"},
		// A FIFO hung --config.check (issue 32, item 6).
		{"config check of a FIFO", []string{"--config.file=" + fifo, "--config.check"}, []int{1}, fifo + " is a FIFO, not a regular file"},
		{"version", []string{"version"}, []int{0}, "clockwatch, version"},
		{"status", []string{"status"}, []int{0, 1, 2}, "Clock health   :"},
		{"unknown command", []string{"frobnicate"}, []int{2}, "clockwatch: unexpected frobnicate (try --help)"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
			defer cancel()
			out, err := exec.CommandContext(ctx, binary, tt.args...).CombinedOutput()
			code := 0
			if ee, ok := err.(*exec.ExitError); ok {
				code = ee.ExitCode()
			} else if err != nil {
				t.Fatal(err)
			}
			found := false
			for _, c := range tt.wantCode {
				found = found || c == code
			}
			if !found {
				t.Errorf("exit code %d, want one of %v; output:\n%s", code, tt.wantCode, out)
			}
			if !strings.Contains(string(out), tt.wantOut) {
				t.Errorf("output lacks %q:\n%s", tt.wantOut, out)
			}
		})
	}
}

// Under systemd socket activation with both sockets passed (HTTP and the
// stepdown socket, FileDescriptorName=stepdown), each server takes its own:
// HTTP answers on the TCP socket and the stepdown socket says hello.
func TestSocketActivationOfBothSockets(t *testing.T) {
	t.Parallel()
	httpL, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	sdPath := filepath.Join(t.TempDir(), "stepdown.sock")
	sdL, err := net.Listen("unix", sdPath)
	if err != nil {
		t.Fatal(err)
	}
	httpF, err := httpL.(*net.TCPListener).File()
	if err != nil {
		t.Fatal(err)
	}
	sdF, err := sdL.(*net.UnixListener).File()
	if err != nil {
		t.Fatal(err)
	}
	addr := httpL.Addr().String()
	httpL.Close()
	sdL.(*net.UnixListener).SetUnlinkOnClose(false)
	sdL.Close()

	// systemd sets LISTEN_PID to the service's own pid: a shell that execs
	// the daemon has it as $$.
	cmd := exec.Command("/bin/sh", "-c", `LISTEN_PID=$$ LISTEN_FDS=2 LISTEN_FDNAMES=http:stepdown exec "$0" "$@"`,
		binary, "--web.systemd-socket", noChronyConfig(t))
	cmd.Env = append(os.Environ(), "STATE_DIRECTORY="+t.TempDir(), "RUNTIME_DIRECTORY="+t.TempDir())
	cmd.ExtraFiles = []*os.File{httpF, sdF} // fds 3 and 4
	var log testtool.SyncBuffer
	cmd.Stderr = &log
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	httpF.Close()
	sdF.Close()
	t.Cleanup(func() {
		_ = cmd.Process.Signal(syscall.SIGTERM)
		if err := cmd.Wait(); err != nil {
			t.Errorf("clockwatch exited with %v; log:\n%s", err, log.String())
		}
	})

	deadline := time.Now().Add(20 * time.Second)
	for {
		resp, err := http.Get("http://" + addr + "/healthz")
		if err == nil {
			resp.Body.Close()
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("no HTTP on the activated socket: %v; log:\n%s", err, log.String())
		}
		time.Sleep(20 * time.Millisecond)
	}
	c, err := net.Dial("unix", sdPath)
	if err != nil {
		t.Fatalf("stepdown socket: %v; log:\n%s", err, log.String())
	}
	defer c.Close()
	_ = c.SetReadDeadline(time.Now().Add(10 * time.Second))
	line, err := bufio.NewReader(c).ReadString('\n')
	if err != nil || !strings.Contains(line, `"type":"hello"`) {
		t.Fatalf("stepdown socket said %q, %v; want a hello", line, err)
	}
}
