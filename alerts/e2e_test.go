package alerts

import (
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/clockwatch/clockwatch/internal/daemontest"
	"github.com/clockwatch/clockwatch/internal/promtest"
	"github.com/clockwatch/clockwatch/internal/testtool"
)

// pageTimeout bounds how long a condition may take to reach the webhook.
// The path takes about 1-2 s (scrape 1 s, evaluation 1 s, group_wait 0s);
// the margin is for a loaded machine.
const pageTimeout = 30 * time.Second

var (
	forRE    = regexp.MustCompile(`(?m)^(\s+for:) \S+$`)
	windowRE = regexp.MustCompile(`\[10m\]`)
)

// fastRules writes a copy of the rules with every `for:` set to 0s and the
// 10-minute windows shortened to 30s, so that a condition pages within
// seconds and clears within half a minute. Everything else (expressions,
// labels, annotations) is the shipped file.
func fastRules(t *testing.T) string {
	t.Helper()
	b, err := os.ReadFile(rulesFile)
	if err != nil {
		t.Fatal(err)
	}
	fast := forRE.ReplaceAllString(string(b), "$1 0s")
	fast = windowRE.ReplaceAllString(fast, "[30s]")
	if fast == string(b) {
		t.Fatal("rewriting the rules changed nothing")
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
	l.rows = append(l.rows, fmt.Sprintf("%-60s %6.2f s", what, d.Seconds()))
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
	for _, k := range []string{"summary", "description"} {
		if !strings.Contains(a.Annotations[k], instance) || strings.Contains(a.Annotations[k], "{{") {
			t.Errorf("%s: %s %q does not name %s or is not rendered", name, k, a.Annotations[k], instance)
		}
	}
	return a
}

// TestAlertPath runs the shipped rules (with for: 0s and short windows) in
// a real Prometheus against real clockwatch daemons, with a real
// Alertmanager sending to a webhook, and drives clockwatch into each alert
// condition that can be made without touching this machine's clock. Each
// must page with the right labels and annotations, then resolve.
func TestAlertPath(t *testing.T) {
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
	// Prometheus without disturbing each other.
	kernel := daemontest.Start(t, bin)
	down := daemontest.Start(t, bin)

	hook := promtest.NewWebhook(t)
	am := promtest.StartAlertmanager(t, promtest.WebhookConfig(hook.URL))
	prom := promtest.StartPrometheus(t, promtest.PrometheusOptions{
		Targets:       []string{kernel.Addr, down.Addr},
		RuleFiles:     []string{fastRules(t)},
		Alertmanagers: []string{am.Addr},
	})
	prom.WaitTargetsUp(t, "clockwatch", 2, 60*time.Second)
	s := &stack{hook: hook, prom: prom, rules: rules}
	var lat latencies
	t.Cleanup(func() {
		if !t.Failed() {
			t.Logf("condition → webhook:\n%s", strings.Join(lat.rows, "\n"))
		}
	})

	// This machine's own kernel clock: nothing disciplines it here (no time
	// daemon runs: chronyd would control this machine's clock), so the kernel
	// reports it unsynchronised with maxerror at its ceiling. Those are real
	// conditions; they cannot be cleared without disciplining the clock, so
	// only the firing side is checked.
	t.Run("kernel", func(t *testing.T) {
		t.Parallel()
		v := prom.WaitVector(t, fmt.Sprintf(`clockwatch_kernel_synchronized{instance=%q}`, kernel.Addr), pageTimeout, promtest.NonEmpty)
		if v[0].Value == 0 {
			s.wantAlert(t, "firing", "ClockwatchNotSynchronised", kernel.Addr, nil)
		} else {
			t.Logf("the kernel clock is synchronised here: ClockwatchNotSynchronised not checked")
		}
		v = prom.WaitVector(t, fmt.Sprintf(`clockwatch_kernel_maxerror_seconds{instance=%q}`, kernel.Addr), pageTimeout, promtest.NonEmpty)
		if v[0].Value >= 16 {
			s.wantAlert(t, "firing", "ClockwatchKernelMaxErrorSaturated", kernel.Addr, nil)
		} else {
			t.Logf("kernel maxerror is %v here: ClockwatchKernelMaxErrorSaturated not checked", v[0].Value)
		}
	})

	// clockwatch stops: Prometheus's scrape fails (up 0) and ClockwatchDown
	// pages; it comes back on the same address and the alert resolves.
	t.Run("down", func(t *testing.T) {
		t.Parallel()
		if err := down.Stop(); err != nil {
			t.Fatal(err)
		}
		start := time.Now()
		a := s.wantAlert(t, "firing", "ClockwatchDown", down.Addr, nil)
		lat.add("clockwatch stopped → ClockwatchDown firing", a.Received.Sub(start))
		want := fmt.Sprintf("clockwatch on %s is down", down.Addr)
		if a.Annotations["summary"] != want {
			t.Errorf("summary %q, want %q", a.Annotations["summary"], want)
		}
		restarted := daemontest.StartAt(t, bin, down.Addr)
		start = time.Now()
		a = s.wantAlert(t, "resolved", "ClockwatchDown", restarted.Addr, nil)
		lat.add("clockwatch restarted → ClockwatchDown resolved", a.Received.Sub(start))
	})
}
