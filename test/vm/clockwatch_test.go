package vm_test

import (
	"fmt"
	"math"
	"testing"
	"time"

	"github.com/clockwatch/clockwatch/test/vm"
)

const (
	clockwatchPath = "/bin/clockwatch"
	// listen is where the daemon serves /metrics on the guest's loopback.
	listen     = "127.0.0.1:9847"
	metricsURL = "http://" + listen + "/metrics"
	gapMetric  = "clockwatch_clock_wall_boot_gap_seconds"
)

// TestClockwatchSeesStepsInVM runs the real daemon, statically built, in the
// VM, steps the clock under it and checks what its /metrics (fetched over the
// guest's loopback) says about each step: the wall−boot gap it exports moves
// by exactly the step.
func TestClockwatchSeesStepsInVM(t *testing.T) {
	// Not parallel: see doc.go.
	steps := []vm.Step{
		{Delta: -12400 * time.Millisecond, Method: "settime"},
		{Delta: time.Hour, Method: "settime"},
		{Delta: -250 * time.Millisecond, Method: "setoffset"},
		{Date: "2031-05-06 07:08:09"},
	}
	// Scrape after each step; the scrape itself is the wait.
	script := fmt.Sprintf(`set -e
clockwatch --web.listen-address=%s >/tmp/clockwatch.log 2>&1 &
cw_wait_http %s || { cat /tmp/clockwatch.log; exit 1; }
cw_metrics 0 %s
`, listen, metricsURL, metricsURL) + vm.StepsScript(steps, "cw_metrics $CW_STEP "+metricsURL) + `
kill $! && wait $! || true
`
	res, err := vm.Run(t, vm.Options{
		Files: map[string]string{
			clockwatchPath:   vm.BuildGo(t, "github.com/clockwatch/clockwatch/cmd/clockwatch"),
			vm.ClockstepPath: vm.BuildGo(t, "./clockstep"),
		},
		Script: script,
		CPUs:   2,
	})
	if err != nil {
		t.Fatal(err)
	}
	t.Logf("boot to /init %v, script %v, whole run %v", res.Booted, res.ScriptTime, res.Elapsed)
	made, err := vm.MadeSteps(res, steps)
	if err != nil {
		t.Fatal(err)
	}
	prev := gap(t, res, 0)
	for i, m := range made {
		cur := gap(t, res, i+1)
		got := time.Duration(math.Round((cur - prev) * 1e9))
		if (got < 0) != (m.Applied < 0) || (got-m.Applied).Abs() > time.Millisecond {
			t.Errorf("step %d (%v): %s moved by %v, the kernel applied %v (± 1ms)", i+1, m.Step, gapMetric, got, m.Applied)
		}
		prev = cur
	}
}

func gap(t *testing.T, res *vm.Result, tag int) float64 {
	t.Helper()
	mfs, err := res.Metrics(fmt.Sprint(tag))
	if err != nil {
		t.Fatal(err)
	}
	v, err := vm.Value(mfs, gapMetric)
	if err != nil {
		t.Fatalf("scrape %d: %v", tag, err)
	}
	return v
}
