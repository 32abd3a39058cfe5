package vm_test

import (
	"testing"
	"time"

	"github.com/clockwatch/clockwatch/test/vm"
	"github.com/clockwatch/clockwatch/test/vm/guest"
)

// TestTimerfdSeesEachStep proves, on a real kernel, the mechanism clockwatch's
// clock-set watcher relies on: a CLOCK_REALTIME timerfd armed with
// TFD_TIMER_ABSTIME|TFD_TIMER_CANCEL_ON_SET, read through Go's netpoller,
// wakes once per step, whether clock_settime, clock_adjtime(ADJ_SETOFFSET) or
// date -s made it, and the REALTIME−BOOTTIME gap read at the wake gives the
// step's size and sign to well under 1 ms. It logs the wake latency
// (docs/performance.md).
func TestTimerfdSeesEachStep(t *testing.T) {
	// Not parallel: see doc.go.
	steps := vm.StandardSteps()
	script := `set -e
stepwatch -ready /tmp/netpoll.ready -wakes /tmp/netpoll.wakes &
netpoll=$!
stepwatch -blocking -ready /tmp/blocking.ready -wakes /tmp/blocking.wakes &
cw_wait_file /tmp/netpoll.ready
cw_wait_file /tmp/blocking.ready
` + vm.StepsScript(steps, "cw_wait_content /tmp/netpoll.wakes $CW_STEP && cw_wait_content /tmp/blocking.wakes $CW_STEP") + `
kill $netpoll $!
`
	res, err := vm.Run(t, vm.Options{
		Files: map[string]string{
			vm.ClockstepPath: vm.BuildGo(t, "./clockstep"),
			vm.StepwatchPath: vm.BuildGo(t, "./stepwatch"),
		},
		Script: script,
		// Two vCPUs, so that the watcher can run while clockstep does, as
		// clockwatch would on a real machine.
		CPUs: 2,
	})
	if err != nil {
		t.Fatal(err)
	}
	t.Logf("boot to /init %v, %d steps in %v, whole run %v", res.Booted, len(steps), res.ScriptTime, res.Elapsed)
	made, err := vm.MadeSteps(res, steps)
	if err != nil {
		t.Fatal(err)
	}
	all, err := vm.Decode[guest.Wake](res, guest.KindWake)
	if err != nil {
		t.Fatal(err)
	}
	for _, watcher := range []string{guest.WatcherNetpoll, guest.WatcherBlocking} {
		var wakes []guest.Wake
		for _, w := range all {
			if w.Watcher == watcher {
				wakes = append(wakes, w)
			}
		}
		checkWakes(t, watcher, made, wakes)
	}
}

// checkWakes checks that one stepwatch saw each step once, with the size and
// sign the kernel applied, and logs its wake latency.
func checkWakes(t *testing.T, watcher string, made []vm.MadeStep, wakes []guest.Wake) {
	t.Helper()
	if len(wakes) != len(made) {
		t.Fatalf("%s: stepwatch woke %d times for %d steps", watcher, len(wakes), len(made))
	}
	const tolerance = time.Millisecond
	var fromStart, fromReturn []time.Duration
	for i, m := range made {
		w := wakes[i]
		if got := time.Duration(w.DeltaNS); (got < 0) != (m.Applied < 0) || (got-m.Applied).Abs() > tolerance {
			t.Errorf("%s: step %d (%v): the timerfd wake measured %v, the kernel applied %v (± %v)", watcher, i+1, m.Step, got, m.Applied, tolerance)
		}
		if moved := time.Duration(w.RearmMovedNS); moved.Abs() > 100*time.Microsecond {
			t.Errorf("%s: step %d (%v): the gap moved %v between wake and re-arm: a step was missed", watcher, i+1, m.Step, moved)
		}
		if m.CallStart == 0 {
			continue // date -s does not say when it called.
		}
		if w.MonoNS <= m.CallStart {
			t.Errorf("%s: step %d (%v): woke at %d ns, before the stepping call started at %d ns", watcher, i+1, m.Step, w.MonoNS, m.CallStart)
		}
		fromStart = append(fromStart, time.Duration(w.MonoNS-m.CallStart))
		fromReturn = append(fromReturn, time.Duration(w.MonoNS-m.CallReturn))
	}
	if len(fromStart) < 20 {
		t.Fatalf("%s: only %d latencies measured, want at least 20", watcher, len(fromStart))
	}
	t.Logf("%s: timerfd wake latency from the stepping call's start: %v", watcher, vm.Summarize(fromStart))
	t.Logf("%s: timerfd wake latency from the stepping call's return: %v", watcher, vm.Summarize(fromReturn))
}
