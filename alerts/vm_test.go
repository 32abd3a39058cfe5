package alerts

import (
	"bufio"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"regexp"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/clockwatch/clockwatch/internal/promtest"
	"github.com/clockwatch/clockwatch/internal/testtool"
	"github.com/clockwatch/clockwatch/test/vm"
)

// Console lines of the VM scenario: the guest prints the step metrics of
// its clockwatch between consoleBegin and consoleEnd, each line prefixed
// with consoleLine, and consoleStep just before it steps its clock.
const (
	consoleBegin = "CWM-BEGIN"
	consoleLine  = "CWM "
	consoleEnd   = "CWM-END"
	consoleStep  = "CW-STEP-NOW"
)

// consoleRelay serves, as a scrape target, the last metrics snapshot a
// guest printed on its console: the VM has no network, so the serial
// console carries clockwatch's metrics from the guest to this Prometheus.
type consoleRelay struct {
	mu       sync.Mutex
	snapshot string    // the last complete snapshot, "" before the first
	stepped  time.Time // when consoleStep arrived
	w        *io.PipeWriter
}

// newConsoleRelay returns a relay whose Write takes the console, and the
// address it serves /metrics on.
func newConsoleRelay(t *testing.T) (*consoleRelay, string) {
	t.Helper()
	r, w := io.Pipe()
	c := &consoleRelay{w: w}
	go c.read(r)
	srv := httptest.NewServer(http.HandlerFunc(func(rw http.ResponseWriter, _ *http.Request) {
		c.mu.Lock()
		s := c.snapshot
		c.mu.Unlock()
		if s == "" {
			http.Error(rw, "no metrics from the guest yet", http.StatusServiceUnavailable)
			return
		}
		io.WriteString(rw, s)
	}))
	t.Cleanup(func() { srv.Close(); w.Close() })
	return c, srv.Listener.Addr().String()
}

// Write implements io.Writer for vm.Options.Console.
func (c *consoleRelay) Write(p []byte) (int, error) { return c.w.Write(p) }

func (c *consoleRelay) read(r io.Reader) {
	sc := bufio.NewScanner(r)
	var cur []string
	in := false
	for sc.Scan() {
		line := strings.TrimRight(sc.Text(), "\r")
		switch {
		case line == consoleBegin:
			cur, in = nil, true
		case line == consoleEnd && in:
			c.mu.Lock()
			c.snapshot = strings.Join(cur, "\n") + "\n"
			c.mu.Unlock()
			in = false
		case in && strings.HasPrefix(line, consoleLine):
			cur = append(cur, strings.TrimPrefix(line, consoleLine))
		case line == consoleStep:
			c.mu.Lock()
			c.stepped = time.Now()
			c.mu.Unlock()
		}
	}
	io.Copy(io.Discard, r) // a line too long for the scanner: keep draining
}

func (c *consoleRelay) steppedAt() time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.stepped
}

// TestAlertPathVMStep steps a real kernel's clock: clockwatch runs in a VM
// (test/vm), the clock is stepped back 12.4 s under it, and its step
// metrics travel over the serial console to a relay this Prometheus
// scrapes. The page must arrive, then resolve. The guest waits a few
// seconds before stepping so that Prometheus has scraped the clock
// unstepped (the guest cannot hear from the host); the latency is measured
// from the console line printed just before the step.
func TestAlertPathVMStep(t *testing.T) {
	t.Parallel()
	testtool.Short(t)
	testtool.Require(t, "prometheus")
	testtool.Require(t, "prometheus-alertmanager")
	// vm.Run checks these too, but in its goroutine it could not skip.
	testtool.Require(t, "qemu-system-x86_64")
	testtool.Require(t, "busybox")
	vm.Kernel(t)

	relay, addr := newConsoleRelay(t)
	hook := promtest.NewWebhook(t)
	am := promtest.StartAlertmanager(t, promtest.WebhookConfig(hook.URL))
	prom := promtest.StartPrometheus(t, promtest.PrometheusOptions{
		Targets:       []string{addr},
		RuleFiles:     []string{fastRules(t)},
		Alertmanagers: []string{am.Addr},
	})
	rules := map[string]rule{}
	for _, r := range readRules(t) {
		rules[r.Alert] = r
	}
	s := &stack{hook: hook, prom: prom, rules: rules}

	files := map[string]string{
		"/bin/clockwatch": vm.BuildGo(t, "github.com/clockwatch/clockwatch/cmd/clockwatch"),
		vm.ClockstepPath:  vm.BuildGo(t, "github.com/clockwatch/clockwatch/test/vm/clockstep"),
	}
	script := fmt.Sprintf(`set -e
clockwatch --web.listen-address=127.0.0.1:9847 >/tmp/clockwatch.log 2>&1 &
cw_wait_metric http://127.0.0.1:9847/metrics '^clockwatch_clock_set_watcher_up 1' || { cat /tmp/clockwatch.log; exit 1; }
relay() {
	while :; do
		if wget -q -O /tmp/m http://127.0.0.1:9847/metrics; then
			echo %[1]s
			grep -E '^clockwatch_clock_(steps_total|last_step_seconds|last_step_timestamp_seconds)[ {]' /tmp/m | sed 's/^/%[2]s/'
			echo %[3]s
		fi
		usleep 200000
	done
}
relay &
# Pace, not readiness: give the host's Prometheus time to scrape the clock
# unstepped; the host cannot tell the guest when it has.
cw_deadline 8
until cw_expired; do usleep 100000; done
echo %[4]s
%[5]s setoffset:-12.4s
cw_deadline 4
until cw_expired; do usleep 100000; done
`, consoleBegin, consoleLine, consoleEnd, consoleStep, vm.ClockstepPath)
	type runResult struct {
		res *vm.Result
		err error
	}
	done := make(chan runResult, 1)
	go func() {
		res, err := vm.Run(t, vm.Options{Files: files, Script: script, Console: relay})
		done <- runResult{res, err}
	}()

	const name = "ClockwatchClockStepBackward"
	labels := map[string]string{"direction": "backward"}
	// The page's time counts from the step: the boot before it takes
	// from 5 s to over 20 s on a loaded host (it failed CI at load 9 with
	// the page's 30 s counted from the start of the boot).
	for start := time.Now(); relay.steppedAt().IsZero(); time.Sleep(100 * time.Millisecond) {
		select {
		case r := <-done:
			t.Fatalf("the VM ended before the guest stepped its clock: %v", r.err)
		default:
		}
		if time.Since(start) > 3*time.Minute {
			t.Fatal("the guest did not step its clock within 3 minutes of the start")
		}
	}
	a := s.wantAlert(t, "firing", name, addr, labels)
	stepped := relay.steppedAt()
	if a.Received.Before(stepped) {
		t.Fatalf("%s fired at %v, before the guest stepped its clock at %v", name, a.Received, stepped)
	}
	// The step as measured in the guest, within its read uncertainty.
	if !regexp.MustCompile(`\(last step: -12\.(39|4|40|41)\d*s\)`).MatchString(a.Annotations["description"]) {
		t.Errorf("description %q does not give the step of -12.4 s", a.Annotations["description"])
	}
	t.Logf("clock stepped -12.4 s in the VM → %s firing: %.2f s", name, a.Received.Sub(stepped).Seconds())
	r := <-done
	if r.err != nil {
		t.Fatalf("%v\nconsole:\n%s", r.err, r.res.Console)
	}
	a = s.wantAlert(t, "resolved", name, addr, labels)
	t.Logf("%s resolved %.2f s after the step (window %s); VM boot %v, whole run %v",
		name, a.Received.Sub(stepped).Seconds(), window, r.res.Booted, r.res.Elapsed)
}
