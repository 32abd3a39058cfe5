package vm_test

import (
	"encoding/json"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/clockwatch/clockwatch/test/vm"
	"github.com/clockwatch/clockwatch/test/vm/guest"
)

const boundwatchPath = "/bin/boundwatch"

// TestBoundedTimeSegmentOnRealStep is issue 13 on a real kernel: clockwatch
// runs in the VM (no time source there, so the segment says "unknown"; the
// kernel's unsynchronised clock does not hold a stepdown), the
// clock is stepped by -3 s, and a reader of the segment (boundwatch, through
// package stepdown/boundedtime) must see "disrupted", then "unknown" again
// after the hold-down. It logs the time from the stepping call's return to
// the reader seeing "disrupted", and to a subscriber of the stepdown socket
// receiving the stepdown (docs/performance.md).
func TestBoundedTimeSegmentOnRealStep(t *testing.T) {
	// Not parallel: see doc.go.
	r := segmentOnStep(t, true, vm.Step{Delta: -3 * time.Second, Method: "setoffset"})
	msgs, err := vm.Decode[guest.StepdownMsg](r.res, guest.KindStepdownMsg)
	if err != nil {
		t.Fatal(err)
	}
	var pushed int64
	for _, m := range msgs {
		var head struct{ Type, Reason string }
		if json.Unmarshal(m.Message, &head) == nil && head.Type == "stepdown" && head.Reason == "step" {
			pushed = m.ReceivedMonoNS
			break
		}
	}
	if pushed == 0 {
		t.Fatalf("the socket's subscriber got no stepdown for the step; console:\n%s", r.res.Console)
	}
	t.Logf("step of %v: after the stepping call returned, the socket's subscriber had the stepdown in %v, the segment's reader saw disrupted in %v (boot %v, run %v)",
		r.made.Applied, time.Duration(pushed-r.made.CallReturn), time.Duration(r.disrupted-r.made.CallReturn), r.res.Booted, r.res.Elapsed)
}

// TestBoundedTimeSegmentWithoutSocket is issue 20's case: with the stepdown
// socket off (stepdown.enabled: false) and the segment on, a real step still
// makes the segment "disrupted", then "unknown" again after the hold-down.
// The announcer is the daemon's, not the socket's: an application that reads
// only the segment must not be told its clock is fine right after a step.
func TestBoundedTimeSegmentWithoutSocket(t *testing.T) {
	// Not parallel: see doc.go.
	r := segmentOnStep(t, false, vm.Step{Delta: 3 * time.Second, Method: "setoffset"})
	t.Logf("step of %v with the socket off: the segment's reader saw disrupted %v after the stepping call returned (boot %v, run %v)",
		r.made.Applied, time.Duration(r.disrupted-r.made.CallReturn), r.res.Booted, r.res.Elapsed)
}

// segmentRun is what segmentOnStep saw: the VM's run, the step as made, and
// when the segment's reader first saw "disrupted" (CLOCK_MONOTONIC, ns).
type segmentRun struct {
	res       *vm.Result
	made      vm.MadeStep
	disrupted int64
}

// segmentOnStep runs clockwatch in the VM with the segment on and the
// stepdown socket on or off (a subscriber records it when on), makes step,
// and checks that the segment's reader saw "unknown", "disrupted" and
// "unknown" again after the hold-down, disrupted after the stepping call.
func segmentOnStep(t *testing.T, socket bool, step vm.Step) segmentRun {
	t.Helper()
	// printf's format: \n are its newlines.
	conf := `stepdown:\n  hold_down: 2s\n  triggers:\n    error_bound: {enabled: false}\n    unsynchronized: {enabled: false}\nclockbound:\n  interval: 100ms\n`
	files := map[string]string{
		clockwatchPath:   vm.BuildGo(t, "github.com/clockwatch/clockwatch/cmd/clockwatch"),
		vm.ClockstepPath: vm.BuildGo(t, "./clockstep"),
		boundwatchPath:   vm.BuildGo(t, "./boundwatch"),
	}
	// With the socket on, a subscriber records it; off, nothing may listen.
	follow := `sockwatch -out /tmp/stepdown.jsonl &
cw_wait_count /tmp/stepdown.jsonl '"type":"hello"' 1 30`
	if socket {
		files[sockwatchPath] = vm.BuildGo(t, "./sockwatch")
	} else {
		conf = strings.Replace(conf, `stepdown:\n`, `stepdown:\n  enabled: false\n`, 1)
		follow = `if [ -e /run/clockwatch/stepdown.sock ]; then echo "stepdown socket exists although stepdown.enabled is false"; exit 1; fi`
	}
	script := fmt.Sprintf(`set -e
trap '[ $? = 0 ] || { echo "log:"; tail -n 40 /tmp/clockwatch.log; cat /tmp/bound.jsonl; }' EXIT
printf '%[5]s' >/tmp/clockwatch.yml
clockwatch --config.file=/tmp/clockwatch.yml --web.listen-address=%[1]s >/tmp/clockwatch.log 2>&1 &
daemon=$!
boundwatch -out /tmp/bound.jsonl &
cw_wait_count /tmp/bound.jsonl '"status":"unknown"' 1 30
%[6]s
%[2]s -first 1 %[3]s:%[4]s
cw_wait_count /tmp/bound.jsonl '"status":"disrupted"' 1 30
cw_wait_count /tmp/bound.jsonl '"status":"unknown"' 2 30
kill $daemon && wait $daemon || true
`, listen, vm.ClockstepPath, step.Method, step.Delta, conf, follow)
	res, err := vm.Run(t, vm.Options{Files: files, Script: script, CPUs: 2})
	if err != nil {
		t.Fatal(err)
	}
	made, err := vm.MadeSteps(res, []vm.Step{step})
	if err != nil {
		t.Fatal(err)
	}
	seen, err := vm.Decode[guest.BoundStatus](res, guest.KindBoundStatus)
	if err != nil {
		t.Fatal(err)
	}
	var statuses []string
	var disrupted int64
	for _, s := range seen {
		statuses = append(statuses, s.Status)
		if s.Status == "disrupted" && disrupted == 0 {
			disrupted = s.MonoNS
		}
	}
	if fmt.Sprint(statuses) != "[unknown disrupted unknown]" {
		t.Fatalf("with the socket %s the segment's reader saw %v, want [unknown disrupted unknown]; console:\n%s", onOff(socket), statuses, res.Console)
	}
	if disrupted <= made[0].CallStart {
		t.Errorf("disrupted seen at %d ns, before the step's call started at %d ns", disrupted, made[0].CallStart)
	}
	return segmentRun{res: res, made: made[0], disrupted: disrupted}
}

func onOff(on bool) string {
	if on {
		return "on"
	}
	return "off"
}
