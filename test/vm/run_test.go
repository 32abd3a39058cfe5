package vm_test

import (
	"strings"
	"testing"
	"time"

	"github.com/clockwatch/clockwatch/test/vm"
)

// TestRunReportsTheScript boots once with a script that checks the guest
// setup Options.Script promises, checks that a wait helper gives up after its
// time limit (counted in guest uptime) and says what it waited for, prints
// result lines and exits 3: Run must hand back the status as an error and in
// Result, with the console.
func TestRunReportsTheScript(t *testing.T) {
	// Not parallel: see doc.go.
	res, err := vm.Run(t, vm.Options{
		Files: map[string]string{"/data/in/a.txt": "testdata/small.cpio"},
		Script: `set -e
grep -qw clockwatch.testvm=1 /proc/cmdline
[ "$(ip -o addr show lo | grep -c 127.0.0.1)" = 1 ]
test -c /dev/null && test -d /sys/class && test -w /tmp && test -w /run
test -s /data/in/a.txt && test -e /etc/clockwatch-testvm
type cw_wait_file >/dev/null
date -s '2030-01-02 03:04:05' >/dev/null
echo 'CW-RESULT {"kind":"probe","year":'$(date +%Y)'}'
read -r start _ </proc/uptime
if cw_wait_count /tmp/none x 1 2; then exit 1; fi
read -r end _ </proc/uptime
echo 'CW-RESULT {"kind":"waited","start":'$start',"end":'$end'}'
exit 3
`,
	})
	if err == nil || !strings.Contains(err.Error(), "the guest script exited with status 3") {
		t.Fatalf("Run() error = %v, want the script's status 3", err)
	}
	if res.ExitCode != 3 {
		t.Errorf("ExitCode = %d, want 3", res.ExitCode)
	}
	if res.Booted <= 0 || res.Elapsed < res.Booted {
		t.Errorf("Booted %v, Elapsed %v: want 0 < Booted <= Elapsed", res.Booted, res.Elapsed)
	}
	recs, err := vm.Decode[struct{ Year int }](res, "probe")
	if err != nil || len(recs) != 1 || recs[0].Year != 2030 {
		t.Errorf("probe results = %+v, %v: want one, year 2030 (after date -s); console:\n%s", recs, err, res.Console)
	}
	if !strings.Contains(res.Console, "CW-TIMEOUT waiting for 1 lines matching x in /tmp/none (got )") {
		t.Errorf("no timeout message on the console:\n%s", res.Console)
	}
	w, err := vm.Decode[struct{ Start, End float64 }](res, "waited")
	if err != nil || len(w) != 1 {
		t.Fatalf("waited results = %v, %v; console:\n%s", w, err, res.Console)
	}
	// A 2 s limit in whole seconds of uptime: between 1 and 3 s.
	if d := w[0].End - w[0].Start; d < 1 || d > 3.5 {
		t.Errorf("cw_wait_count with a 2 s limit gave up after %.2f s", d)
	}
}

// TestRunKillsAtTimeout gives a guest that never powers off less time than
// it takes to boot: Run must kill its qemu and say so.
func TestRunKillsAtTimeout(t *testing.T) {
	t.Parallel()
	start := time.Now()
	res, err := vm.Run(t, vm.Options{Script: "sleep 1000", Timeout: time.Second})
	if err == nil || !strings.Contains(err.Error(), "did not power off within 1s") {
		t.Fatalf("Run() error = %v, want a timeout", err)
	}
	if res.ExitCode != -1 {
		t.Errorf("ExitCode = %d, want -1", res.ExitCode)
	}
	if d := time.Since(start); d > 10*time.Second {
		t.Errorf("Run() took %v to give up after a 1 s timeout", d)
	}
}
