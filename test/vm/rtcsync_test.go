package vm_test

import (
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/clockwatch/clockwatch/internal/exporter"
	"github.com/clockwatch/clockwatch/internal/testtool"
	"github.com/clockwatch/clockwatch/test/vm"
	"github.com/clockwatch/clockwatch/test/vm/guest"
)

// rtcsyncLessConf is a chrony.conf as many hosts have it: no rtcsync, so
// chronyd on Linux never clears the kernel's STA_UNSYNC flag while it
// disciplines the clock (chrony's sys_timex.c).
const rtcsyncLessConf = `server 127.0.0.1 port 11123 iburst minpoll -4 maxpoll -4
makestep 0.1 3
driftfile /var/lib/chrony/drift
pidfile /run/chrony/chronyd.pid
bindcmdaddress /run/chrony/chronyd.sock
cmdport 0
`

// healthyFor is how long the rtcsync-less host must stay ok: three times
// the unsynchronized trigger's default 60 s grace.
const healthyFor = 3 * time.Minute

// TestChronydWithoutRTCSync is issue 11's first item in a VM: a real chronyd
// synchronised to a server in the guest, disciplining the guest's clock,
// without rtcsync. The kernel says STA_UNSYNC the whole time, with a small
// maxerror. A subscriber connected from clockwatch's start must get no
// stepdown for three minutes (with the default triggers); `clockwatch
// status` must call the clock synchronised and mention rtcsync. Then the
// time server goes away (the unsynchronized grace shortened to 2 s by a
// reload, to keep the test short): chronyd loses its source and the
// unsynchronized trigger must fire, for chrony.
func TestChronydWithoutRTCSync(t *testing.T) {
	// Not parallel: see doc.go.
	chronyd := testtool.Require(t, "chronyd")
	script := fmt.Sprintf(`set -e
trap '[ $? = 0 ] || { echo "chronyd log:"; cat /tmp/chronyd.log; echo "clockwatch log:"; tail -n 40 /tmp/clockwatch.log; }' EXIT
mkdir -p /var/lib/chrony /run/chrony /etc/chrony && chmod 700 /run/chrony
cat >/etc/chrony/chrony.conf <<'CONF'
%[3]sCONF
echo 0s >/tmp/ntp.offset
ntpserve -addr 127.0.0.1:11123 -offset-file /tmp/ntp.offset &
ntp=$!
/usr/sbin/chronyd -n -u root -f /etc/chrony/chrony.conf -L 0 -l /tmp/chronyd.log &
cw_wait_count /tmp/chronyd.log 'Selected source' 1 60
# Until chronyd has converged its error bound is over 1 s (the guest's RTC
# starts it up to 1 s off): a true stepdown. A first clockwatch, without
# the stepdown socket, waits for it to settle. It keeps its state in its
# own directories: the daemon under test restores the stepdown state it
# finds (the warmup's error_bound, with a fresh 30 s hold-down), and this
# test is about a daemon that starts next to a synchronised chronyd.
printf 'stepdown: {enabled: false}\n' >/tmp/warmup.yml
mkdir -p /tmp/warmup-state /tmp/warmup-run
STATE_DIRECTORY=/tmp/warmup-state RUNTIME_DIRECTORY=/tmp/warmup-run \
	clockwatch --web.listen-address=%[1]s --config.file=/tmp/warmup.yml >/tmp/warmup.log 2>&1 &
warmup=$!
cw_wait_metric %[2]s '^clockwatch_chrony_clock_error_bound_seconds 0\.0' 120
kill $warmup && wait $warmup || true
printf 'stepdown:\n  triggers:\n    error_bound: {enabled: true, threshold: 1s}\n' >/etc/clockwatch.yml
sockwatch -out /tmp/stepdown.jsonl &
clockwatch --web.listen-address=%[1]s --config.file=/etc/clockwatch.yml >/tmp/clockwatch.log 2>&1 &
daemon=$!
cw_wait_count /tmp/stepdown.jsonl '"state":"ok"' 1 30
cw_metrics synced %[2]s
sleep %[4]d
cw_metrics later %[2]s
clockwatch status --config.file=/etc/clockwatch.yml | sed 's/^/CW-STATUS /' || true
echo "CW-MARK server-gone"
printf 'stepdown:\n  triggers:\n    unsynchronized: {enabled: true, grace: 2s}\n' >/etc/clockwatch.yml
kill -HUP $daemon
kill $ntp
cw_wait_count /tmp/stepdown.jsonl '"reason":"unsynchronized"' 1 60 || { cw_metrics gone %[2]s; exit 1; }
cw_metrics gone %[2]s
kill $daemon && wait $daemon || true
grep -c 'Can.t synchronise' /tmp/chronyd.log || true
`, listen, metricsURL, rtcsyncLessConf, int(healthyFor.Seconds()))
	res, err := vm.Run(t, vm.Options{
		Files: map[string]string{
			clockwatchPath:  vm.BuildGo(t, "github.com/clockwatch/clockwatch/cmd/clockwatch"),
			"/bin/ntpserve": vm.BuildGo(t, "./ntpserve"),
			sockwatchPath:   vm.BuildGo(t, "./sockwatch"),
		},
		Dynamic: map[string]string{"/usr/sbin/chronyd": chronyd},
		Script:  script,
		CPUs:    2,
		Timeout: healthyFor + 3*time.Minute,
	})
	if err != nil {
		t.Fatal(err)
	}
	t.Logf("boot to /init %v, script %v, whole run %v", res.Booted, res.ScriptTime, res.Elapsed)

	// The scenario: chronyd synchronised, the kernel's flag unsynchronised,
	// its maxerror small.
	for _, tag := range []string{"synced", "later"} {
		mfs, err := res.Metrics(tag)
		if err != nil {
			t.Fatal(err)
		}
		ksync, err1 := vm.Value(mfs, exporter.MetricKernelSynchronized)
		maxErr, err2 := vm.Value(mfs, exporter.MetricKernelMaxError)
		leap, err3 := vm.Value(mfs, "clockwatch_chrony_tracking_leap_status")
		if err := errors.Join(err1, err2, err3); err != nil {
			t.Fatal(err)
		}
		t.Logf("%s: clockwatch_kernel_synchronized %v, maxerror %vs, chronyd leap status %v", tag, ksync, maxErr, leap)
		if ksync != 0 || maxErr >= 16 || leap != 0 {
			t.Fatalf("%s: not the rtcsync-less scenario (kernel synchronized %v, maxerror %v, chronyd leap %v); console:\n%s", tag, ksync, maxErr, leap, res.Console)
		}
	}

	msgs, err := vm.Decode[guest.StepdownMsg](res, guest.KindStepdownMsg)
	if err != nil {
		t.Fatal(err)
	}
	var got []string
	var unsynced *stepdownMessage
	for _, m := range msgs {
		var d struct {
			stepdownMessage
			State  string `json:"state"`
			Source string `json:"source"`
			Detail string `json:"detail"`
		}
		if err := json.Unmarshal(m.Message, &d); err != nil {
			t.Fatal(err)
		}
		got = append(got, fmt.Sprintf("%s %s %s %s", d.Type, d.State, d.Reason, d.Source))
		t.Logf("subscriber received (mono %v): %s", time.Duration(m.ReceivedMonoNS), m.Message)
		switch {
		case d.Type == "stepdown" && d.Reason == "unsynchronized" && d.Source == "chrony":
			unsynced = &d.stepdownMessage
		case d.Type == "stepdown":
			t.Errorf("false stepdown on a host chronyd disciplines: %s", m.Message)
		}
	}
	// The subscriber connects as clockwatch starts: it gets a hello in
	// state unknown and the resume of the start, or, connected a moment
	// later, a hello in state ok. Then nothing until the server is gone.
	fromStart := len(got) == 3 && got[0] == "hello unknown starting " && got[1] == "resume ok starting "
	later := len(got) == 2 && got[0] == "hello ok  "
	if !fromStart && !later || !strings.HasPrefix(got[len(got)-1], "stepdown stepdown unsynchronized chrony") {
		t.Errorf("messages %q, want a hello (unknown, then the resume of the start; or ok), then, once the server is gone, the unsynchronized stepdown only", got)
	}
	if unsynced == nil {
		t.Errorf("no unsynchronized stepdown for chrony after the time server went away; console:\n%s", res.Console)
	}

	status := consoleLines(res.Console, "CW-STATUS ")
	for _, want := range []string{"Kernel synced  : yes (maxerror under 16 s", "STA_UNSYNC set", "There is no rtcsync directive"} {
		if !strings.Contains(status, want) {
			t.Errorf("clockwatch status does not say %q:\n%s", want, status)
		}
	}
	if strings.Contains(status, "CRITICAL") || strings.Contains(status, "not synchronised") {
		t.Errorf("clockwatch status on the rtcsync-less host:\n%s", status)
	}
}

func consoleLines(console, prefix string) string {
	var b strings.Builder
	for _, l := range strings.Split(console, "\n") {
		if i := strings.Index(l, prefix); i >= 0 {
			b.WriteString(strings.TrimRight(l[i+len(prefix):], "\r") + "\n")
		}
	}
	return b.String()
}
