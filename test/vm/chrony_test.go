package vm_test

import (
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/clockwatch/clockwatch/internal/journal"
	"github.com/clockwatch/clockwatch/internal/step"
	"github.com/clockwatch/clockwatch/internal/testtool"
	"github.com/clockwatch/clockwatch/test/vm"
)

// chronydConf makes the guest's chronyd follow ntpserve on the guest's
// loopback every 1/16 s and step the clock for any offset over 0.1 s, as a
// chronyd with "makestep" does on a real machine.
const chronydConf = `server 127.0.0.1 port 11123 iburst minpoll -4 maxpoll -4
makestep 0.1 -1
driftfile /var/lib/chrony/drift
pidfile /run/chrony/chronyd.pid
bindcmdaddress /run/chrony/chronyd.sock
cmdport 0
`

// TestChronydStepSeenByClockwatch is the incident itself, in a VM: a real
// chronyd (Debian's, with its shared libraries) follows an NTP server in the
// guest; the server's time is moved 12.4 s back, then 2.5 s forward, and a
// chronyd started after each move steps the guest's clock. clockwatch must report each step
// once, with the size chronyd's log gives to 1 ms.
func TestChronydStepSeenByClockwatch(t *testing.T) {
	// Not parallel: see doc.go.
	chronyd := testtool.Require(t, "chronyd")
	offsets := []time.Duration{-12400 * time.Millisecond, -9900 * time.Millisecond}
	var b strings.Builder
	fmt.Fprintf(&b, `set -e
trap '[ $? = 0 ] || { echo "chronyd log:"; cat /tmp/chronyd.log; echo "journal:"; cat %[3]s/*.jsonl; }' EXIT
mkdir -p /var/lib/chrony /run/chrony && chmod 700 /run/chrony
cat >/etc/chrony.conf <<'CONF'
%[4]sCONF
ntpserve -addr 127.0.0.1:11123 -offset-file /tmp/ntp.offset &
clockwatch --web.listen-address=%[1]s >/tmp/clockwatch.log 2>&1 &
cw_wait_metric %[2]s '^%[5]s 1'
`, listen, metricsURL, journalDir, chronydConf, step.MetricWatcherUp)
	// A chronyd that keeps running after the server's time jumps blends old
	// and new samples and steps in several parts; a fresh one steps once,
	// like chronyd at boot. So each move gets its own chronyd.
	for i, off := range offsets {
		fmt.Fprintf(&b, `echo %[1]s >/tmp/ntp.offset.tmp && mv /tmp/ntp.offset.tmp /tmp/ntp.offset
/usr/sbin/chronyd -n -u root -f /etc/chrony.conf -L 0 -l /tmp/chronyd.log &
chronyd=$!
cw_wait_count /tmp/chronyd.log 'System clock was stepped by' %[2]d 30
cw_wait_count %[3]s/%[4]s '"type":"step"' %[2]d 30
kill $chronyd && wait $chronyd || true
`, off, i+1, journalDir, journal.EventsFile)
	}
	b.WriteString(`sed -n -E 's/.*System clock was stepped by (-?[0-9.]+) seconds.*/CW-RESULT {"kind":"chronyd_step","seconds":\1}/p' /tmp/chronyd.log
clockwatch events --json | sed 's/^{/CW-RESULT {"kind":"clockwatch_event",/'
`)
	res, err := vm.Run(t, vm.Options{
		Files: map[string]string{
			clockwatchPath:  vm.BuildGo(t, "github.com/clockwatch/clockwatch/cmd/clockwatch"),
			"/bin/ntpserve": vm.BuildGo(t, "./ntpserve"),
		},
		Dynamic: map[string]string{"/usr/sbin/chronyd": chronyd},
		Script:  b.String(),
		CPUs:    2,
	})
	if err != nil {
		t.Fatal(err)
	}
	t.Logf("boot to /init %v, script %v, whole run %v", res.Booted, res.ScriptTime, res.Elapsed)
	stepped, err := vm.Decode[struct{ Seconds float64 }](res, "chronyd_step")
	if err != nil {
		t.Fatal(err)
	}
	all, err := vm.Decode[step.Event](res, "clockwatch_event")
	if err != nil {
		t.Fatal(err)
	}
	var events []step.Event
	for _, e := range all {
		if e.Type == step.TypeStep {
			events = append(events, e)
		}
	}
	if len(stepped) != len(offsets) || len(events) != len(offsets) {
		t.Fatalf("chronyd stepped %d times and clockwatch saw %d steps, want %d each; console:\n%s", len(stepped), len(events), len(offsets), res.Console)
	}
	prev := time.Duration(0)
	for i, off := range offsets {
		want := off - prev
		prev = off
		byChronyd := time.Duration(stepped[i].Seconds * 1e9)
		e := events[i]
		t.Logf("server moved %v: chronyd stepped %v, clockwatch saw %v (seen by %v, uncertainty %v)", want, byChronyd, e.Step, e.Seen, e.Uncertainty)
		if (byChronyd - want).Abs() > 100*time.Millisecond {
			t.Errorf("step %d: chronyd stepped %v for a server moved by %v", i+1, byChronyd, want)
		}
		tolerance := max(time.Millisecond, e.Uncertainty+100*time.Microsecond)
		if (e.Step < 0) != (byChronyd < 0) || (e.Step-byChronyd).Abs() > tolerance {
			t.Errorf("step %d: clockwatch saw %v, chronyd stepped %v (± %v)", i+1, e.Step, byChronyd, tolerance)
		}
	}
}
