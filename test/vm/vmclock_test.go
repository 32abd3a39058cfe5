package vm_test

import (
	"encoding/json"
	"fmt"
	"net"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/clockwatch/clockwatch/internal/testtool"
	"github.com/clockwatch/clockwatch/stepdown"
	"github.com/clockwatch/clockwatch/test/vm"
	"github.com/clockwatch/clockwatch/test/vm/guest"
)

// vmclockQuietEnv sets how long TestVMClockMigrationInVM watches a guest
// that is not moved (default 180 s): nothing may happen meanwhile.
const vmclockQuietEnv = "CLOCKWATCH_TEST_VMCLOCK_QUIET"

// vmclockScript is the guest's side: chronyd following an NTP server in the
// guest (so that the segment says "synchronized"), clockwatch, a subscriber
// of the stepdown socket and a reader of the segment; then, between each
// "CW-READY n" it prints and the host's move of the guest, what each move
// must bring. The moves themselves are the host's (QMP).
const vmclockScript = `set -e
trap '[ $? = 0 ] || { echo "clockwatch log:"; tail -n 60 /tmp/clockwatch.log; echo "stepdown:"; cat /tmp/stepdown*.jsonl; echo "bound:"; cat /tmp/bound.jsonl; }' EXIT
insmod ` + vm.VMClockModulePath + `
test -c /dev/vmclock0
# The device's marker: bytes 16..23 of the page, little-endian (read(2) of
# the miscdevice gives the page).
marker() { od -A n -t u8 -j 16 -N 8 /dev/vmclock0 | tr -d ' '; }
echo "CW-RESULT {\"kind\":\"device_marker\",\"marker\":$(marker)}"
mkdir -p /var/lib/chrony /run/chrony && chmod 700 /run/chrony
cat >/etc/chrony.conf <<'CONF'
server 127.0.0.1 port 11123 iburst minpoll -4 maxpoll -4
driftfile /var/lib/chrony/drift
pidfile /run/chrony/chronyd.pid
bindcmdaddress /run/chrony/chronyd.sock
cmdport 0
CONF
cat >/tmp/clockwatch.yml <<'CONF'
stepdown:
  hold_down: 5s
clockbound:
  interval: 100ms
CONF
ntpserve -addr 127.0.0.1:11123 &
/usr/sbin/chronyd -n -u root -f /etc/chrony.conf -L 0 -l /tmp/chronyd.log &
clockwatch --config.file=/tmp/clockwatch.yml --web.listen-address=%[1]s >/tmp/clockwatch.log 2>&1 &
daemon=$!
sockwatch -out /tmp/stepdown.jsonl &
boundwatch -out /tmp/bound.jsonl &
# count FILE TYPE: stepdown messages of TYPE for reason vm_disruption.
count() { grep "\"type\":\"$2\"" "$1" 2>/dev/null | grep -c '"reason":"vm_disruption"' || true; }
# wait_vmd FILE TYPE N: until there are N.
wait_vmd() {
	cw_deadline 120
	until [ "$(count "$1" "$2")" -ge "$3" ]; do
		! cw_expired || { echo "CW-TIMEOUT waiting for $3 $2 vm_disruption in $1"; return 1; }
		usleep 1000
	done
}
# synced_with M: the reader has seen the segment synchronized with marker M
# (a loaded host makes chronyd's polls late: synchronized and free running
# may alternate, so lines are not counted).
synced_with() {
	cw_deadline 120
	until grep -q "\"status\":\"synchronized\",.*\"marker\":$1," /tmp/bound.jsonl; do
		! cw_expired || { echo "CW-TIMEOUT waiting for the reader to see synchronized with marker $1"; return 1; }
		usleep 1000
	done
}
synced_with $(marker)
cw_wait_metric %[2]s '^clockwatch_vmclock_up 1' 30
# Minutes without a move: nothing.
# The start's own verdicts (chronyd's first error bound, say) are in: what
# counts is what comes during the quiet minutes.
sleep 5
messages() { wc -l </tmp/stepdown.jsonl; }
m0=$(messages) b0=$(wc -l </tmp/bound.jsonl)
sleep %[3]d
m=$(marker)
# What the reader saw meanwhile other than a trusted status with the same
# marker (chronyd's late polls on a loaded host may move it between
# synchronized and free running: both trusted, both fine).
other=$(sed -n "$((b0 + 1)),\$p" /tmp/bound.jsonl | grep -E -v -c "\"status\":\"(synchronized|free_running)\",.*\"marker\":$m," || true)
echo "CW-RESULT {\"kind\":\"quiet_end\",\"seconds\":%[3]d,\"messages\":$(( $(messages) - m0 )),\"bound_changes\":$(( $(wc -l </tmp/bound.jsonl) - b0 )),\"untrusted\":$other,\"marker\":$m}"

# 1: a live migration.
echo CW-READY 1
wait_vmd /tmp/stepdown.jsonl stepdown 1
synced_with $(marker)
echo "CW-RESULT {\"kind\":\"device_marker\",\"marker\":$(marker)}"

# 2: saved to a file, restored into a new qemu.
echo CW-READY 2
wait_vmd /tmp/stepdown.jsonl stepdown 2
synced_with $(marker)
echo "CW-RESULT {\"kind\":\"device_marker\",\"marker\":$(marker)}"
cw_metrics moved %[2]s

# 3: migrated while clockwatch is not running: the restart steps down,
# never ok first.
kill $daemon && wait $daemon || true
before=$(marker)
echo CW-READY 3
cw_deadline 120
while [ "$(marker)" = "$before" ]; do
	! cw_expired || { echo "CW-TIMEOUT waiting for the marker to move from $before"; exit 1; }
	usleep 10000
done
echo "CW-RESULT {\"kind\":\"device_marker\",\"marker\":$(marker)}"
clockwatch --config.file=/tmp/clockwatch.yml --web.listen-address=%[1]s >>/tmp/clockwatch.log 2>&1 &
daemon=$!
sockwatch -tag restart -out /tmp/stepdown-restart.jsonl &
cw_deadline 60
until grep -q vm_disruption /tmp/stepdown-restart.jsonl 2>/dev/null; do
	! cw_expired || { echo "CW-TIMEOUT waiting for the restarted clockwatch's vm_disruption"; exit 1; }
	usleep 1000
done
synced_with $(marker)
kill $daemon && wait $daemon || true
grep -E 'VMClock|stepdown event' /tmp/clockwatch.log | sed 's/^/CW-LOG /'
`

// TestVMClockMigrationInVM is issue 22 in a real hypervisor: qemu 10 with
// -device vmclock, Linux 7.3.4 with ptp_vmclock, and in the guest chronyd,
// clockwatch, a subscriber of the stepdown socket (sockwatch) and a reader
// of the segment (boundwatch, package stepdown/boundedtime). The guest is
// watched unmoved for minutes (nothing may happen), then live-migrated to a
// second qemu over loopback, then saved to a file and restored into a third,
// then, with clockwatch stopped, migrated to a fourth and clockwatch
// started again. After each move the subscriber must get a vm_disruption
// stepdown (and after the restart no ok before it), the segment must show
// disrupted with the new marker, and the reader must report nothing trusted
// with the old marker. It logs each message the subscriber received around
// each move with the host's time, the markers, and the time from the
// destination's resume (qemu's RESUME event) to the stepdown reaching the
// guest's console.
func TestVMClockMigrationInVM(t *testing.T) {
	// Not parallel: see doc.go.
	chronyd := testtool.Require(t, "chronyd")
	quiet := 180
	if s := os.Getenv(vmclockQuietEnv); s != "" {
		n, err := strconv.Atoi(s)
		if err != nil || n < 0 {
			t.Fatalf("%s=%q: want seconds", vmclockQuietEnv, s)
		}
		quiet = n
	}
	opts := vm.VMClockOptions(t, vm.Options{
		Files: map[string]string{
			clockwatchPath:  vm.BuildGo(t, "github.com/clockwatch/clockwatch/cmd/clockwatch"),
			sockwatchPath:   vm.BuildGo(t, "./sockwatch"),
			boundwatchPath:  vm.BuildGo(t, "./boundwatch"),
			"/bin/ntpserve": vm.BuildGo(t, "./ntpserve"),
		},
		Dynamic: map[string]string{"/usr/sbin/chronyd": chronyd},
		Script:  fmt.Sprintf(vmclockScript, listen, metricsURL, quiet),
		CPUs:    2,
		Timeout: time.Duration(quiet)*time.Second + 6*time.Minute,
	})
	start := time.Now()
	src, err := vm.Boot(t, opts)
	if err != nil {
		t.Fatal(err)
	}
	machines := []*vm.Machine{src}
	t.Cleanup(func() {
		if t.Failed() { // the error carries the end of one console only
			for _, m := range machines {
				var b strings.Builder
				for _, l := range m.Lines() {
					b.WriteString(l.Text + "\n")
				}
				t.Logf("console of %s:\n%s", m.Name(), b.String())
			}
		}
	})
	var moves []move
	ready := func(m *vm.Machine, n int) {
		t.Helper()
		if _, err := m.WaitLine(regexp.MustCompile(fmt.Sprintf(`^CW-READY %d$`, n)), time.Duration(quiet)*time.Second+4*time.Minute); err != nil {
			t.Fatal(err)
		}
	}
	migrate := func(from *vm.Machine, name string) *vm.Machine {
		t.Helper()
		uri := "tcp:" + freePort(t)
		to, err := from.Incoming(name, uri)
		if err != nil {
			t.Fatal(err)
		}
		begin := time.Now()
		if err := from.Migrate(uri, 2*time.Minute); err != nil {
			t.Fatal(err)
		}
		if err := from.Quit(); err != nil {
			t.Fatal(err)
		}
		ev, err := to.WaitEvent("RESUME", time.Minute)
		if err != nil {
			t.Fatal(err)
		}
		moves = append(moves, move{what: "live migration to " + name, m: to, begin: begin, resumed: ev.At})
		return to
	}

	ready(src, 1)
	dst := migrate(src, "destination")
	machines = append(machines, dst)

	ready(dst, 2)
	snap := filepath.Join(dst.Dir(), "snapshot")
	begin := time.Now()
	if err := dst.SaveTo(snap, 2*time.Minute); err != nil {
		t.Fatal(err)
	}
	if err := dst.Quit(); err != nil {
		t.Fatal(err)
	}
	st, _ := os.Stat(snap)
	saved := time.Now()
	restored, err := dst.Incoming("restored", "file:"+snap)
	if err != nil {
		t.Fatal(err)
	}
	machines = append(machines, restored)
	if err := waitLoaded(restored); err != nil {
		t.Fatal(err)
	}
	if err := restored.Cont(); err != nil {
		t.Fatal(err)
	}
	ev, err := restored.WaitEvent("RESUME", time.Minute)
	if err != nil {
		t.Fatal(err)
	}
	moves = append(moves, move{what: "snapshot restored into a new qemu", m: restored, begin: begin, resumed: ev.At})
	t.Logf("snapshot: %d MiB saved in %v, loaded and resumed %v later", st.Size()>>20, saved.Sub(begin).Round(time.Millisecond), ev.At.Sub(saved).Round(time.Millisecond))

	ready(restored, 3)
	last := migrate(restored, "destination-while-down")
	machines = append(machines, last)
	moved, err := restored.Wait(true)
	if err != nil {
		t.Fatal(err)
	}
	res, err := last.Wait(false)
	if err != nil {
		t.Fatal(err)
	}
	t.Logf("whole run %v (boot to /init %v)", time.Since(start).Round(time.Second), res.Booted)

	// Every console, with the host's time of each line.
	var lines []hostLine
	for _, m := range machines {
		for _, l := range m.Lines() {
			lines = append(lines, hostLine{Line: l, machine: m.Name()})
		}
	}
	for _, l := range lines {
		if strings.HasPrefix(l.Text, "CW-LOG ") {
			t.Logf("clockwatch: %s", strings.TrimPrefix(l.Text, "CW-LOG "))
		}
	}
	checkVMClockRun(t, lines, moves, quiet, moved)
}

// move is one move of the guest, with the host's times.
type move struct {
	what    string
	m       *vm.Machine
	begin   time.Time
	resumed time.Time // qemu's RESUME event on the destination
}

type hostLine struct {
	vm.Line
	machine string
}

// result is one guest result line with the host's time.
type result struct {
	kind    string
	at      time.Time
	machine string
	raw     json.RawMessage
}

func results(t *testing.T, lines []hostLine) []result {
	t.Helper()
	var out []result
	for _, l := range lines {
		i := strings.Index(l.Text, guest.ResultPrefix)
		if i < 0 {
			if strings.HasPrefix(l.Text, "CW-READY ") {
				out = append(out, result{kind: "ready", at: l.At, machine: l.machine, raw: json.RawMessage(strconv.Quote(l.Text))})
			}
			continue
		}
		body := l.Text[i+len(guest.ResultPrefix):]
		var head struct{ Kind string }
		if err := json.Unmarshal([]byte(body), &head); err != nil {
			t.Fatalf("bad result line %q on %s: %v", l.Text, l.machine, err)
		}
		out = append(out, result{kind: head.Kind, at: l.At, machine: l.machine, raw: json.RawMessage(body)})
	}
	return out
}

func checkVMClockRun(t *testing.T, lines []hostLine, moves []move, quiet int, moved *vm.Result) {
	t.Helper()
	rs := results(t, lines)
	var markers []uint64
	var quietEnd struct {
		Messages     int    `json:"messages"`
		BoundChanges int    `json:"bound_changes"`
		Untrusted    int    `json:"untrusted"`
		Marker       uint64 `json:"marker"`
	}
	type msg struct {
		at      time.Time
		machine string
		tag     string
		m       stepdown.Message
		rx      int64 // the subscriber's CLOCK_MONOTONIC at receipt
	}
	var msgs []msg
	var bounds []struct {
		at      time.Time
		machine string
		b       guest.BoundStatus
	}
	for _, r := range rs {
		switch r.kind {
		case "device_marker":
			var d struct{ Marker uint64 }
			json.Unmarshal(r.raw, &d)
			markers = append(markers, d.Marker)
		case "quiet_end":
			json.Unmarshal(r.raw, &quietEnd)
		case guest.KindStepdownMsg:
			var s guest.StepdownMsg
			var m stepdown.Message
			if err := json.Unmarshal(r.raw, &s); err != nil || json.Unmarshal(s.Message, &m) != nil {
				t.Fatalf("bad stepdown line %s", r.raw)
			}
			msgs = append(msgs, msg{at: r.at, machine: r.machine, tag: s.Tag, m: m, rx: s.ReceivedMonoNS})
		case guest.KindBoundStatus:
			var b guest.BoundStatus
			json.Unmarshal(r.raw, &b)
			bounds = append(bounds, struct {
				at      time.Time
				machine string
				b       guest.BoundStatus
			}{r.at, r.machine, b})
		}
	}
	t.Logf("device markers: %v", markers)
	if len(markers) != 4 || markers[0] == markers[1] || markers[1] == markers[2] || markers[2] == markers[3] {
		t.Errorf("device markers %v: want 4 readings, each move a new marker", markers)
	}
	// The quiet minutes: any message (heartbeats are not kept) or any
	// untrusted read would be one too many.
	if quietEnd.Messages != 0 || quietEnd.Marker != markers[0] || quietEnd.Untrusted != 0 {
		t.Errorf("%d s unmoved: %d messages to the subscriber, %d reads other than trusted with marker %d, marker now %d; want none, none, the same",
			quiet, quietEnd.Messages, quietEnd.Untrusted, markers[0], quietEnd.Marker)
	}
	t.Logf("%d s without a move: %d messages to the subscriber, %d changes seen by the reader (%d of them untrusted or with another marker), marker %d throughout",
		quiet, quietEnd.Messages, quietEnd.BoundChanges, quietEnd.Untrusted, quietEnd.Marker)

	for _, m := range msgs {
		t.Logf("subscriber%s on %s at %s: %s", tagged(m.tag), m.machine, m.at.UTC().Format("15:04:05.000"), m.m)
	}
	for _, b := range bounds {
		t.Logf("reader on %s at %s: %s (segment marker %d, VMClock flag %v)", b.machine, b.at.UTC().Format("15:04:05.000"), b.b.Status, b.b.Marker, b.b.VMClock)
	}

	// Each move: the first vm_disruption stepdown on the destination's
	// console, and its latency after the destination resumed.
	for i, mv := range moves {
		var first *msg
		for j := range msgs {
			m := &msgs[j]
			if m.machine == mv.m.Name() && m.m.Type == stepdown.TypeStepdown && m.m.Reason == stepdown.ReasonVMDisruption ||
				m.machine == mv.m.Name() && m.tag == "restart" && m.m.State == stepdown.StateStepdown && m.m.Reason == stepdown.ReasonVMDisruption {
				first = m
				break
			}
		}
		if first == nil {
			t.Errorf("%s: the subscriber got no vm_disruption stepdown", mv.what)
			continue
		}
		t.Logf("%s (move %d): resumed %s, %s on the console %v later: %s", mv.what, i+1,
			mv.resumed.UTC().Format("15:04:05.000"), first.m.Type, first.at.Sub(mv.resumed).Round(time.Millisecond), first.m.Detail)
		// Where the time goes, in the guest's CLOCK_MONOTONIC: the reader's
		// first read after the move (the guest running again), clockwatch's
		// read of the new marker (the event's mono), the subscriber's receipt.
		for _, b := range bounds {
			if b.machine == mv.m.Name() {
				t.Logf("  %s: host resume → the reader's first read after it %v; then → clockwatch's read of the marker %v → the subscriber %v (guest clock)",
					mv.what, b.at.Sub(mv.resumed).Round(time.Millisecond), time.Duration(first.m.MonoNanos-b.b.MonoNS).Round(time.Millisecond),
					time.Duration(first.rx-first.m.MonoNanos).Round(time.Millisecond))
				break
			}
		}
		if first.m.Type == stepdown.TypeHello {
			continue // the restarted clockwatch had announced it before the subscriber connected
		}
		if !strings.Contains(first.m.Detail, fmt.Sprintf("marker %d, was %d", markers[i+1], markers[i])) {
			t.Errorf("%s: stepdown detail %q, want marker %d, was %d", mv.what, first.m.Detail, markers[i+1], markers[i])
		}
	}
	// After the restart: never ok before the vm_disruption.
	for _, m := range msgs {
		if m.tag != "restart" {
			continue
		}
		if m.m.Reason == stepdown.ReasonVMDisruption {
			if !strings.Contains(m.m.Detail, "while clockwatch was not running") && m.m.Type == stepdown.TypeStepdown {
				t.Errorf("the restart's stepdown says %q, want it to say the move came while clockwatch was not running", m.m.Detail)
			}
			break
		}
		if m.m.State == stepdown.StateOK {
			t.Errorf("the restarted clockwatch said ok before the vm_disruption: %s", m.m)
		}
	}
	// The reader, around the two moves clockwatch watched: with the old
	// marker nothing but unknown (the device has moved, the segment not
	// yet: caught when the reader ran in that window), then disrupted with
	// the new marker before anything trusted, then only the new marker,
	// trusted again (synchronized; free running for a moment while
	// chronyd's next answer is late is trusted too), ending synchronized.
	for i := range 2 {
		var seq []string
		for _, b := range bounds {
			if b.machine == moves[i].m.Name() {
				seq = append(seq, fmt.Sprintf("%s/%d", b.b.Status, b.b.Marker))
			}
		}
		old, cur := markers[i], markers[i+1]
		rest := seq
		caught := len(rest) > 0 && rest[0] == fmt.Sprintf("unknown/%d", old)
		if caught {
			rest = rest[1:]
		}
		// unknown with the new marker is as untrusted (seen once at host
		// load 15: a segment the reader found stale, or a state held down
		// for another reason at that instant): it may come first.
		for len(rest) > 0 && rest[0] == fmt.Sprintf("unknown/%d", cur) {
			rest = rest[1:]
		}
		// (The segment ages into free running once the script stops
		// clockwatch before the next move.)
		ok := len(rest) >= 2 && rest[0] == fmt.Sprintf("disrupted/%d", cur) && slices.Contains(rest, fmt.Sprintf("synchronized/%d", cur))
		for _, e := range rest {
			ok = ok && strings.HasSuffix(e, fmt.Sprintf("/%d", cur))
		}
		if !ok {
			t.Errorf("%s: the reader saw %v, want [unknown/%d], [unknown/%d], disrupted/%d, then only marker %d, synchronized/%d among them (nothing trusted until the segment has the new marker)",
				moves[i].what, seq, old, cur, cur, cur, cur)
		}
		t.Logf("%s: the reader saw %v (the window with the old marker %s)", moves[i].what, seq, map[bool]string{true: "caught: unknown", false: "missed: the reader did not run in it"}[caught])
	}
	mfs, err := moved.Metrics("moved")
	if err != nil {
		t.Fatal(err)
	}
	if n, err := vm.Value(mfs, "clockwatch_vmclock_disruptions_total"); err != nil || n != 2 {
		t.Errorf("clockwatch_vmclock_disruptions_total = %v (%v), want 2", n, err)
	}
}

func tagged(tag string) string {
	if tag == "" {
		return ""
	}
	return " " + tag
}

// freePort returns a loopback address nobody listens on now.
func freePort(t *testing.T) string {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := l.Addr().String()
	l.Close()
	return addr
}

// waitLoaded waits until a qemu started with -incoming file: has loaded
// the state (its status leaves "inmigrate").
func waitLoaded(m *vm.Machine) error {
	deadline := time.Now().Add(2 * time.Minute)
	for {
		b, err := m.Execute("query-status", nil)
		if err != nil {
			return err
		}
		var st struct{ Status string }
		json.Unmarshal(b, &st)
		if st.Status != "inmigrate" {
			return nil
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("qemu (%s) still loading its snapshot after 2 min", m.Name())
		}
		time.Sleep(5 * time.Millisecond)
	}
}
