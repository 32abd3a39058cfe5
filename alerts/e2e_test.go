package alerts

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"runtime"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/prometheus/common/model"
	"golang.org/x/sys/unix"

	"github.com/clockwatch/clockwatch/internal/chronydtest"
	"github.com/clockwatch/clockwatch/internal/daemontest"
	"github.com/clockwatch/clockwatch/internal/host"
	"github.com/clockwatch/clockwatch/internal/journal"
	"github.com/clockwatch/clockwatch/internal/promtest"
	"github.com/clockwatch/clockwatch/internal/testtool"
	"github.com/clockwatch/clockwatch/stepdown"
)

// pageTimeout bounds how long a condition may take to reach the webhook.
// The path takes about 1-2 s (scrape 1 s, evaluation 1 s, group_wait 0s);
// the margin is for a loaded machine.
const pageTimeout = 30 * time.Second

// window is what the rules' 10-minute windows become in the end-to-end
// test, so that alerts resolve within seconds.
const window = 15 * time.Second

// rewrites make the shipped rules fast: every `for:` 0s, every 10-minute
// window 15s. Each must match at least once.
var rewrites = []struct {
	re   *regexp.Regexp
	with string
}{
	{regexp.MustCompile(`(?m)^(\s+for:) \S+$`), "$1 0s"},
	{regexp.MustCompile(`\[10m\]`), "[15s]"},
	{regexp.MustCompile(`offset 10m\b`), "offset 15s"},
	{regexp.MustCompile(`(clockwatch_clock_last_step_timestamp_seconds(?:\{[^}]*\})?) < 600\b`), "$1 < 15"},
}

// fastRules writes a copy of the rules rewritten by rewrites. Everything
// else (expressions, labels, annotations) is the shipped file.
func fastRules(t *testing.T) string {
	t.Helper()
	b, err := os.ReadFile(rulesFile)
	if err != nil {
		t.Fatal(err)
	}
	fast := string(b)
	for _, r := range rewrites {
		if !r.re.MatchString(fast) {
			t.Fatalf("%s: nothing matches %s", rulesFile, r.re)
		}
		fast = r.re.ReplaceAllString(fast, r.with)
	}
	path := filepath.Join(t.TempDir(), "clockwatch.fast.rules.yml")
	if err := os.WriteFile(path, []byte(fast), 0o600); err != nil {
		t.Fatal(err)
	}
	return path
}

// latencies collects the measured condition-to-webhook times for the log.
type latencies struct {
	mu   sync.Mutex
	rows []string
}

func (l *latencies) add(what string, d time.Duration) {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.rows = append(l.rows, fmt.Sprintf("%-72s %6.2f s", what, d.Seconds()))
}

// stack is Alertmanager, its webhook and Prometheus with the (fast) rules,
// scraping a set of clockwatch daemons.
type stack struct {
	hook  *promtest.Webhook
	prom  *promtest.Prometheus
	rules map[string]rule
}

// wantAlert waits for an alert with status and checks its labels and that
// its annotations are those of the rule, for this instance.
func (s *stack) wantAlert(t *testing.T, status, name, instance string, extra map[string]string) promtest.Alert {
	t.Helper()
	want := map[string]string{"alertname": name, "instance": instance}
	for k, v := range extra {
		want[k] = v
	}
	a := s.hook.Wait(t, status, want, pageTimeout)
	r := s.rules[name]
	if got := a.Labels["severity"]; got != r.Labels["severity"] {
		t.Errorf("%s: severity %q, want %q", name, got, r.Labels["severity"])
	}
	if a.Labels["job"] != "clockwatch" {
		t.Errorf("%s: job %q, want clockwatch", name, a.Labels["job"])
	}
	if got := a.Annotations["runbook_url"]; got != r.Annotations["runbook_url"] {
		t.Errorf("%s: runbook_url %q, want %q", name, got, r.Annotations["runbook_url"])
	}
	if got := a.Annotations["summary"]; got != r.Annotations["summary"] {
		t.Errorf("%s: summary %q, want the rule's static %q", name, got, r.Annotations["summary"])
	}
	if d := a.Annotations["description"]; !strings.Contains(d, instance) || strings.Contains(d, "{{") {
		t.Errorf("%s: description %q does not name %s or is not rendered", name, d, instance)
	}
	return a
}

// TestAlertPath runs the shipped rules (with for: 0s and short windows) in
// a real Prometheus against real clockwatch daemons, with a real
// Alertmanager sending to a webhook, and drives clockwatch into each alert
// condition that can be made without touching this machine's clock. Each
// must page with the right labels and annotations, then resolve.
func TestAlertPath(t *testing.T) {
	t.Parallel()
	testtool.Short(t)
	testtool.Require(t, "prometheus")
	testtool.Require(t, "prometheus-alertmanager")
	bin := daemontest.Build(t)
	rules := map[string]rule{}
	for _, r := range readRules(t) {
		if r.Alert != "" {
			rules[r.Alert] = r
		}
	}

	// One clockwatch per scenario, so that they run side by side in one
	// Prometheus without disturbing each other. The kernel scenario's also
	// polls an ntpd that is not there.
	kernel := daemontest.Start(t, bin, daemontest.Options{Args: []string{"--config.file=" + writeFile(t, "clockwatch.yml",
		fmt.Sprintf("ntpd: {enabled: true, address: %q, poll_interval: 1s, timeout: 200ms}\n", promtest.FreeAddr(t)))}})
	// Daemons that restart where Prometheus scrapes them get a port no
	// one else takes meanwhile (promtest.FreeAddr).
	down := daemontest.Start(t, bin, daemontest.Options{Addr: promtest.FreeAddr(t)})
	collector := daemontest.Start(t, bin, daemontest.Options{Addr: promtest.FreeAddr(t)})
	// A drill needs the stepdown state ok: on a machine whose clock nothing
	// disciplines (this one), the kernel's error bound and sync state
	// would hold clockwatch in stepdown, so those triggers are off here.
	drill := daemontest.Start(t, bin, daemontest.Options{Args: []string{"--config.file=" + writeFile(t, "clockwatch.yml", `stepdown:
  triggers:
    error_bound: {enabled: false, threshold: 1s}
    unsynchronized: {enabled: false, grace: 1m}
`)}})
	// chronyd -x (it never touches the clock) behind a test NTP server
	// whose time the test shifts; clockwatch reads chronyd and probes the
	// same server itself.
	chronyd := chronydtest.Start(t, chronydtest.Options{Sources: 1})
	ntpServer := chronyd.Servers[0].Addr().String()
	withChrony := daemontest.Start(t, bin, daemontest.Options{Args: []string{"--config.file=" + writeFile(t, "clockwatch.yml", fmt.Sprintf(`chrony:
  address: %s
  conf_path: %s
  poll_interval: 250ms
  timeout: 200ms
ntp_probes:
  servers: [%q]
  interval: 1s
  samples: 1
  sample_spacing: 0s
stepdown:
  triggers:
    error_bound: {enabled: false, threshold: 1s}
    unsynchronized: {enabled: false, grace: 1m}
`, chronyd.Socket, chronyd.Conf, ntpServer))}})
	// The step scenarios start their clockwatch later, where Prometheus
	// already tries to scrape.
	backwardAddr, forwardAddr := promtest.FreeAddr(t), promtest.FreeAddr(t)

	hook := promtest.NewWebhook(t)
	am := promtest.StartAlertmanager(t, promtest.WebhookConfig(hook.URL))
	prom := promtest.StartPrometheus(t, promtest.PrometheusOptions{
		Targets:       []string{kernel.Addr, down.Addr, collector.Addr, drill.Addr, withChrony.Addr, backwardAddr, forwardAddr},
		RuleFiles:     []string{fastRules(t)},
		Alertmanagers: []string{am.Addr},
	})
	prom.WaitTargetsUp(t, "clockwatch", 5, 60*time.Second) // all but the step scenarios
	s := &stack{hook: hook, prom: prom, rules: rules}
	var lat latencies
	// expectedPages are the pages the scenarios provoke, by instance; any
	// other critical alert is a false page.
	expectedPages := map[string][]string{
		backwardAddr:    {"ClockwatchClockStepBackward"},
		forwardAddr:     {"ClockwatchClockStepForward"},
		withChrony.Addr: {"ClockwatchClockOffsetCritical", "ClockwatchClockOffsetNtpCritical"},
	}
	t.Cleanup(func() { // after every scenario
		for _, a := range hook.Alerts() {
			if a.Labels["severity"] == "critical" && !slices.Contains(expectedPages[a.Labels["instance"]], a.Labels["alertname"]) {
				t.Errorf("false page: %s %v %v", a.Status, a.Labels, a.Annotations)
			}
		}
		if !t.Failed() {
			t.Logf("condition → webhook:\n%s", strings.Join(lat.rows, "\n"))
		}
	})

	// Real conditions that this test cannot clear, so only their firing
	// side is checked: an ntpd nobody runs (ClockwatchNtpdDown), and this
	// machine's own kernel clock, which nothing disciplines here (a time
	// daemon would control this machine's clock), so the kernel reports it
	// unsynchronised with maxerror at its ceiling.
	t.Run("kernel", func(t *testing.T) {
		t.Parallel()
		s.wantAlert(t, "firing", "ClockwatchNtpdDown", kernel.Addr, nil)
		// Not synchronised means maxerror saturated with no time daemon
		// answering (STA_UNSYNC alone is not enough: chronyd leaves it set
		// without rtcsync).
		v := prom.WaitVector(t, fmt.Sprintf(`clockwatch_kernel_maxerror_seconds{instance=%q}`, kernel.Addr), pageTimeout, promtest.NonEmpty)
		if v[0].Value >= 16 {
			s.wantAlert(t, "firing", "ClockwatchNotSynchronised", kernel.Addr, nil)
		} else {
			t.Logf("the kernel clock is disciplined here: ClockwatchNotSynchronised not checked")
		}
		v = prom.WaitVector(t, fmt.Sprintf(`clockwatch_kernel_maxerror_seconds{instance=%q}`, kernel.Addr), pageTimeout, promtest.NonEmpty)
		if v[0].Value >= 16 {
			s.wantAlert(t, "firing", "ClockwatchKernelMaxErrorSaturated", kernel.Addr, nil)
		} else {
			t.Logf("kernel maxerror is %v here: ClockwatchKernelMaxErrorSaturated not checked", v[0].Value)
		}
	})

	// clockwatch stops: Prometheus's scrape fails (up 0) and ClockwatchDown
	// fires; it comes back on the same address and the alert resolves.
	t.Run("down", func(t *testing.T) {
		t.Parallel()
		if err := down.Stop(); err != nil {
			t.Fatal(err)
		}
		start := time.Now()
		a := s.wantAlert(t, "firing", "ClockwatchDown", down.Addr, nil)
		lat.add("clockwatch stopped → ClockwatchDown firing", a.Received.Sub(start))
		want := fmt.Sprintf("Prometheus has failed to scrape clockwatch on %s for 2 minutes.", down.Addr)
		if !strings.HasPrefix(a.Annotations["description"], want) {
			t.Errorf("description %q, want it to start %q", a.Annotations["description"], want)
		}
		restarted := daemontest.Start(t, bin, daemontest.Options{Addr: down.Addr, StateDir: down.StateDir, RuntimeDir: down.RuntimeDir})
		start = time.Now()
		a = s.wantAlert(t, "resolved", "ClockwatchDown", restarted.Addr, nil)
		lat.add("clockwatch restarted → ClockwatchDown resolved", a.Received.Sub(start))
	})

	// chronyd's server jumps 2 s ahead: chronyd (and clockwatch's own
	// probe) find this clock 2 s behind. That pages twice, once from
	// chronyd's view and once from the independent probe, and clockwatch
	// tells its subscribers to step down (reason offset). The server comes
	// back: everything resolves. Then chronyd is killed (ClockwatchChronyDown)
	// and restarted.
	t.Run("chrony", func(t *testing.T) {
		t.Parallel()
		inst := fmt.Sprintf("instance=%q", withChrony.Addr)
		prom.WaitVector(t, `clockwatch_chrony_up{`+inst+`} == 1 and abs(clockwatch_chrony_tracking_system_time_offset_seconds{`+inst+`}) < 0.1`, pageTimeout, promtest.NonEmpty)
		waitNewSeriesCounted(t, prom, withChrony.Addr)

		start := time.Now()
		chronyd.SetOffset(2 * time.Second)
		a := s.wantAlert(t, "firing", "ClockwatchClockOffsetCritical", withChrony.Addr, nil)
		lat.add("NTP server +2 s → chronyd → ClockwatchClockOffsetCritical firing", a.Received.Sub(start))
		// chronyd's estimate moves to 2 s over a few samples, overshooting
		// by a few hundred ms while its regression settles (2.23 s seen
		// once); the page fires on the first evaluation above 500 ms.
		m := regexp.MustCompile(`on ` + regexp.QuoteMeta(withChrony.Addr) + ` estimates the system clock is (\S+) away`).FindStringSubmatch(a.Annotations["description"])
		var off string
		if len(m) == 2 {
			off = m[1]
		}
		if d, err := time.ParseDuration(off); err != nil || d <= 500*time.Millisecond || d > 2500*time.Millisecond {
			t.Errorf("description %q, want the clock off by 500ms to 2.5s", a.Annotations["description"])
		}
		a = s.wantAlert(t, "firing", "ClockwatchClockOffsetNtpCritical", withChrony.Addr, nil)
		lat.add("NTP server +2 s → clockwatch's probe → ClockwatchClockOffsetNtpCritical firing", a.Received.Sub(start))
		a = s.wantAlert(t, "firing", "ClockwatchStepdownAnnounced", withChrony.Addr, map[string]string{"reason": "offset"})
		lat.add("NTP server +2 s → stepdown → ClockwatchStepdownAnnounced{reason=\"offset\"} firing", a.Received.Sub(start))

		start = time.Now()
		chronyd.SetOffset(0)
		a = s.wantAlert(t, "resolved", "ClockwatchClockOffsetCritical", withChrony.Addr, nil)
		lat.add("NTP server back → ClockwatchClockOffsetCritical resolved", a.Received.Sub(start))
		a = s.wantAlert(t, "resolved", "ClockwatchClockOffsetNtpCritical", withChrony.Addr, nil)
		lat.add("NTP server back → ClockwatchClockOffsetNtpCritical resolved", a.Received.Sub(start))

		start = time.Now()
		chronyd.Stop()
		a = s.wantAlert(t, "firing", "ClockwatchChronyDown", withChrony.Addr, nil)
		lat.add("chronyd killed → ClockwatchChronyDown firing", a.Received.Sub(start))
		start = time.Now()
		chronyd.Restart()
		a = s.wantAlert(t, "resolved", "ClockwatchChronyDown", withChrony.Addr, nil)
		lat.add("chronyd restarted → ClockwatchChronyDown resolved", a.Received.Sub(start))
	})

	// clockwatch restarted where adjtimex is forbidden (systemd's
	// ProtectClock=yes does that): its kernel collector fails at every
	// scrape. Restarted without the filter, it recovers.
	t.Run("collector", func(t *testing.T) {
		t.Parallel()
		if runtime.GOARCH != "amd64" {
			t.Skip("the adjtimex seccomp filter is written for amd64")
		}
		if err := collector.Stop(); err != nil {
			t.Fatal(err)
		}
		denied := daemontest.Start(t, os.Args[0], daemontest.Options{Addr: collector.Addr, StateDir: collector.StateDir,
			RuntimeDir: collector.RuntimeDir, Env: []string{denyAdjtimexEnv + "=" + bin}})
		start := time.Now()
		a := s.wantAlert(t, "firing", "ClockwatchCollectorFailing", collector.Addr, map[string]string{"collector": "kernel"})
		lat.add("clockwatch restarted without adjtimex → ClockwatchCollectorFailing firing", a.Received.Sub(start))
		if err := denied.Stop(); err != nil {
			t.Fatal(err)
		}
		daemontest.Start(t, bin, daemontest.Options{Addr: collector.Addr, StateDir: collector.StateDir, RuntimeDir: collector.RuntimeDir})
		start = time.Now()
		a = s.wantAlert(t, "resolved", "ClockwatchCollectorFailing", collector.Addr, map[string]string{"collector": "kernel"})
		lat.add("restarted with adjtimex → ClockwatchCollectorFailing resolved", a.Received.Sub(start))
	})

	// A drill with a subscriber that does not ack: the drill is recorded
	// (info), the missing ack is a ticket; the late ack resolves it.
	t.Run("drill", func(t *testing.T) {
		t.Parallel()
		sub, err := stepdown.Dial(context.Background(), drill.StepdownSocket())
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { sub.Close() })
		stepdowns := make(chan uint64, 8)
		go func() {
			for {
				m, err := sub.Read()
				if err != nil {
					return
				}
				if m.Type == stepdown.TypeStepdown {
					stepdowns <- m.Seq
				}
			}
		}()
		waitNewSeriesCounted(t, prom, drill.Addr)
		start := time.Now()
		out, err := exec.Command(bin, "drill", "--socket="+drill.StepdownSocket(), "--reason=step", "--step=-12.4s", "--hold=2s").CombinedOutput()
		if err != nil {
			t.Fatalf("clockwatch drill: %v\n%s", err, out)
		}
		a := s.wantAlert(t, "firing", "ClockwatchStepdownDrill", drill.Addr, map[string]string{"reason": "step"})
		lat.add("clockwatch drill → ClockwatchStepdownDrill firing", a.Received.Sub(start))
		a = s.wantAlert(t, "firing", "ClockwatchStepdownUnacknowledged", drill.Addr, nil)
		lat.add("drill not acked → ClockwatchStepdownUnacknowledged firing", a.Received.Sub(start))
		var seq uint64
		select {
		case seq = <-stepdowns:
		case <-time.After(pageTimeout):
			t.Fatal("the subscriber got no stepdown")
		}
		acked := time.Now()
		if err := sub.Ack(seq); err != nil {
			t.Fatal(err)
		}
		a = s.wantAlert(t, "resolved", "ClockwatchStepdownUnacknowledged", drill.Addr, nil)
		lat.add("ack → ClockwatchStepdownUnacknowledged resolved", a.Received.Sub(acked))
		if d := a.Received.Sub(acked); d > window-time.Second {
			t.Errorf("resolved %s after the ack: the window passing resolved it, not the ack (an unacked stepdown left?)", d)
		}
		a = s.wantAlert(t, "resolved", "ClockwatchStepdownDrill", drill.Addr, map[string]string{"reason": "step"})
		lat.add(fmt.Sprintf("ClockwatchStepdownDrill resolved, window %s", window), a.Received.Sub(start))
	})

	// A step made while clockwatch was not running: clockwatch's journal
	// says what REALTIME−BOOTTIME was when it last ran in this boot, and
	// the first sample at start finds it changed. Writing that state with
	// the gap shifted is how this test makes a step without touching the
	// clock; detection, metrics, rules and the alert path are the real ones.
	for _, tc := range []struct {
		name, addr, alert, direction string
		step                         time.Duration
		text                         string
	}{
		{"step backward", backwardAddr, "ClockwatchClockStepBackward", "backward", -12400 * time.Millisecond, "(last step: -12.4s)"},
		{"step forward", forwardAddr, "ClockwatchClockStepForward", "forward", 2 * time.Second, "(last step: 2s; limit 500ms)"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			dir := t.TempDir()
			writeStepState(t, dir, tc.step)
			waitNewSeriesCounted(t, prom, tc.addr)
			start := time.Now()
			daemontest.Start(t, bin, daemontest.Options{Addr: tc.addr, StateDir: dir})
			a := s.wantAlert(t, "firing", tc.alert, tc.addr, map[string]string{"direction": tc.direction})
			lat.add(fmt.Sprintf("clockwatch started after a %s step → %s firing", tc.step, tc.alert), a.Received.Sub(start))
			if !strings.Contains(a.Annotations["description"], tc.text) {
				t.Errorf("description %q does not say %q", a.Annotations["description"], tc.text)
			}
			// The step is a real one to clockwatch: it tells its
			// subscribers to step down, and that pages as a ticket too.
			a = s.wantAlert(t, "firing", "ClockwatchStepdownAnnounced", tc.addr, map[string]string{"reason": "step"})
			lat.add("… → ClockwatchStepdownAnnounced{reason=\"step\"} firing", a.Received.Sub(start))
			a = s.wantAlert(t, "resolved", tc.alert, tc.addr, map[string]string{"direction": tc.direction})
			lat.add(fmt.Sprintf("%s resolved, window %s", tc.alert, window), a.Received.Sub(start))
		})
	}
}

// writeStepState writes the journal state (journal/state.json) of an
// earlier clockwatch run in this boot, one second ago, that saw
// REALTIME−BOOTTIME smaller by step than it is now: to the next clockwatch
// started in dir, the clock was stepped by step while it was not running.
func writeStepState(t *testing.T, dir string, step time.Duration) {
	t.Helper()
	bootID, err := os.ReadFile(host.BootIDPath)
	if err != nil {
		t.Fatal(err)
	}
	var boot, real unix.Timespec
	if err := unix.ClockGettime(unix.CLOCK_BOOTTIME, &boot); err != nil {
		t.Fatal(err)
	}
	if err := unix.ClockGettime(unix.CLOCK_REALTIME, &real); err != nil {
		t.Fatal(err)
	}
	state := map[string]any{
		"epoch":       1,
		"seq":         1,
		"boot_id":     strings.TrimSpace(string(bootID)),
		"gap_ns":      real.Nano() - boot.Nano() - int64(step),
		"gap_boot_ns": boot.Nano() - int64(time.Second),
	}
	b, err := json.Marshal(state)
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, journal.StateFile), b, 0o640); err != nil {
		t.Fatal(err)
	}
}

// waitNewSeriesCounted waits until Prometheus has scraped addr for a whole
// window, so that a counter series that appears now counts as new events
// (instance:clockwatch_stepdown_events:increase10m needs the target scraped
// a window ago).
func waitNewSeriesCounted(t *testing.T, prom *promtest.Prometheus, addr string) {
	t.Helper()
	prom.WaitVector(t, fmt.Sprintf(`up{instance=%q} offset %s`, addr, model.Duration(window)), 2*window+pageTimeout, promtest.NonEmpty)
}

// writeFile writes content to a new file in a temporary directory.
func writeFile(t *testing.T, name, content string) string {
	t.Helper()
	path := filepath.Join(t.TempDir(), name)
	if err := os.WriteFile(path, []byte(content), 0o600); err != nil {
		t.Fatal(err)
	}
	return path
}
