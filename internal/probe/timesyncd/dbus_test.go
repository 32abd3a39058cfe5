package timesyncd

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/clockwatch/clockwatch/internal/loop"
	"github.com/clockwatch/clockwatch/internal/testtool"
	"github.com/godbus/dbus/v5"
)

// busPolicy is a test bus on which anyone may do anything, with an
// activatable org.freedesktop.timesync1 whose start leaves a file behind.
const busPolicy = `<!DOCTYPE busconfig PUBLIC "-//freedesktop//DTD D-Bus Bus Configuration 1.0//EN"
 "http://www.freedesktop.org/standards/dbus/1.0/busconfig.dtd">
<busconfig>
  <type>session</type>
  <listen>unix:path=%[1]s/bus</listen>
  <auth>EXTERNAL</auth>
  <servicedir>%[1]s/services</servicedir>
  <policy context="default">
    <allow send_destination="*" eavesdrop="true"/>
    <allow eavesdrop="true"/>
    <allow own="*"/>
    %[2]s
  </policy>
</busconfig>
`

// startBus runs a real dbus-daemon on a private socket and returns its
// address; extraPolicy goes into its default policy.
func startBus(t testing.TB, extraPolicy string) (address, dir string) {
	t.Helper()
	daemon := testtool.Require(t, "dbus-daemon")
	dir = t.TempDir()
	if err := os.Mkdir(filepath.Join(dir, "services"), 0o755); err != nil {
		t.Fatal(err)
	}
	svc := fmt.Sprintf("[D-BUS Service]\nName=%s\nExec=/bin/sh -c 'touch %s/activated'\n", BusName, dir)
	if err := os.WriteFile(filepath.Join(dir, "services", BusName+".service"), []byte(svc), 0o644); err != nil {
		t.Fatal(err)
	}
	conf := filepath.Join(dir, "bus.conf")
	if err := os.WriteFile(conf, []byte(fmt.Sprintf(busPolicy, dir, extraPolicy)), 0o644); err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command(daemon, "--config-file="+conf, "--nofork", "--nopidfile", "--print-address=1")
	out, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	var stderr testtool.SyncBuffer
	cmd.Stderr = &stderr
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		_ = cmd.Process.Kill()
		_ = cmd.Wait()
	})
	line, err := bufio.NewReader(out).ReadString('\n')
	if err != nil {
		t.Fatalf("dbus-daemon printed no address: %v\n%s", err, stderr.String())
	}
	return strings.TrimSpace(line), dir
}

// fakeTimesyncd owns org.freedesktop.timesync1 on the bus and exports
// props as org.freedesktop.timesync1.Manager's properties. Closing the
// returned connection makes it leave the bus.
func fakeTimesyncd(t testing.TB, address string, props map[string]any) *dbus.Conn {
	t.Helper()
	conn, err := dbus.Connect(address)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { conn.Close() })
	vs := map[string]dbus.Variant{}
	for k, v := range props {
		vs[k] = dbus.MakeVariant(v)
	}
	if err := conn.Export(fakeProperties(vs), ObjectPath, "org.freedesktop.DBus.Properties"); err != nil {
		t.Fatal(err)
	}
	if r, err := conn.RequestName(BusName, dbus.NameFlagDoNotQueue); err != nil || r != dbus.RequestNameReplyPrimaryOwner {
		t.Fatalf("RequestName(%s) = %v, %v", BusName, r, err)
	}
	return conn
}

// fakeProperties is org.freedesktop.DBus.Properties of timesyncd's manager,
// read-only as timesyncd's are.
type fakeProperties map[string]dbus.Variant

func (f fakeProperties) GetAll(iface string) (map[string]dbus.Variant, *dbus.Error) {
	if iface != Interface {
		return nil, dbus.NewError("org.freedesktop.DBus.Error.UnknownInterface", []any{iface})
	}
	return f, nil
}

func (f fakeProperties) Get(iface, name string) (dbus.Variant, *dbus.Error) {
	v, ok := f[name]
	if iface != Interface || !ok {
		return dbus.Variant{}, dbus.NewError("org.freedesktop.DBus.Error.UnknownProperty", []any{name})
	}
	return v, nil
}

// wallUsec is now on the wall clock in microseconds, timesyncd's unit.
func wallUsec() uint64 { return uint64(time.Now().UnixMicro()) }

// syncedProps are the properties of a timesyncd synchronised to
// 192.0.2.1, its clock 1.5 ms behind, the reply received 3 s ago.
func syncedProps() map[string]any {
	t1 := wallUsec() - 3_000_000
	return map[string]any{
		"ServerName": "ntp.example",
		"ServerAddress": struct {
			Family int32
			Addr   []byte
		}{2, []byte{192, 0, 2, 1}},
		"PollIntervalUSec":    uint64(64_000_000),
		"PollIntervalMinUSec": uint64(32_000_000),
		"PollIntervalMaxUSec": uint64(2_048_000_000),
		"RootDistanceMaxUSec": uint64(5_000_000),
		"Frequency":           int64(-12 * 65536),
		"SystemNTPServers":    []string{"ntp.example"},
		"NTPMessage": wireMessage{Leap: 0, Version: 4, Mode: 4, Stratum: 2, Precision: -23,
			RootDelay: 1_000, RootDispersion: 2_000, RefID: []byte{198, 51, 100, 7},
			Origin: t1, Receive: t1 + 1_500 + 200, Transmit: t1 + 1_500 + 300, Destination: t1 + 500,
			PacketCount: 12, Jitter: 150},
	}
}

func newTestPoller(t *testing.T, address, mode string) (*Poller, *testtool.SyncBuffer) {
	t.Helper()
	cfg := DefaultConfig()
	cfg.Address, cfg.Mode = address, mode
	if err := cfg.Validate(); err != nil {
		t.Fatal(err)
	}
	var logs testtool.SyncBuffer
	return NewPoller(cfg, slog.New(slog.NewTextHandler(&logs, &slog.HandlerOptions{Level: slog.LevelInfo}))), &logs
}

func TestPollerAgainstRealBus(t *testing.T) {
	t.Parallel()
	ctx := context.Background()

	t.Run("no bus", func(t *testing.T) {
		t.Parallel()
		p, logs := newTestPoller(t, "unix:path="+t.TempDir()+"/none", ModeAuto)
		p.Poll(ctx)
		p.Poll(ctx)
		s := p.Snapshot()
		if !s.Absent() || s.Found || s.Up || s.Failures != 0 || s.Polls != 2 {
			t.Errorf("snapshot without a bus = %+v, want absent, not found, no failures", s)
		}
		if r := p.Reading(); r.Found || r.Up || !r.IsAbsent() || r.Pending() || r.HasData {
			t.Errorf("Reading() = %+v, want absent (looked for, not there: not pending, raising nothing)", r)
		}
		if logs.String() != "" {
			t.Errorf("an absent timesyncd logged:\n%s", logs.String())
		}
	})

	t.Run("a bus that never answers", func(t *testing.T) {
		t.Parallel()
		sock := filepath.Join(t.TempDir(), "bus")
		l, err := net.Listen("unix", sock)
		if err != nil {
			t.Fatal(err)
		}
		defer l.Close()
		go func() {
			for {
				c, err := l.Accept()
				if err != nil {
					return
				}
				defer c.Close()
			}
		}()
		p, logs := newTestPoller(t, "unix:path="+sock, ModeAuto)
		p.cfg.Timeout = 100 * time.Millisecond
		p.Poll(ctx)
		s := p.Snapshot()
		if s.Up || s.Found || s.Failures != 0 || s.Err == nil || !strings.Contains(s.Err.Error(), "timeout") {
			t.Errorf("snapshot = %+v, want a timeout, not found, no failures", s)
		}
		if r := p.Reading(); r.Found || r.Up || !r.IsAbsent() || r.Pending() || r.HasData {
			t.Errorf("Reading() = %+v, want absent (mode auto, never found: a silent bus raises nothing)", r)
		}
		if logs.String() != "" {
			t.Errorf("a silent bus without a known timesyncd logged at info or above:\n%s", logs.String())
		}
	})

	t.Run("a bus that closes the connection", func(t *testing.T) {
		// What dbus-daemon does to a uid its user database does not know
		// (the DaemonSet's 65532 on a node without it: make test-kubelet).
		t.Parallel()
		sock := filepath.Join(t.TempDir(), "bus")
		l, err := net.Listen("unix", sock)
		if err != nil {
			t.Fatal(err)
		}
		defer l.Close()
		go func() {
			for {
				c, err := l.Accept()
				if err != nil {
					return
				}
				_, _ = c.Read(make([]byte, 64))
				c.Close()
			}
		}()
		p, _ := newTestPoller(t, "unix:path="+sock, ModeAuto)
		p.Poll(ctx)
		s := p.Snapshot()
		if s.Err == nil || !strings.Contains(s.Err.Error(), "the bus closed it") || !strings.Contains(s.Err.Error(), "user database") {
			t.Errorf("error = %v, want one saying the bus closed the connection and why it does", s.Err)
		}
		if r := p.Reading(); !r.IsAbsent() {
			t.Errorf("Reading() = %+v, want absent (mode auto, never found)", r)
		}
	})

	t.Run("nobody owns the name and the bus may not start it", func(t *testing.T) {
		t.Parallel()
		addr, dir := startBus(t, "")
		p, logs := newTestPoller(t, addr, ModeAuto)
		p.Poll(ctx)
		if s := p.Snapshot(); !s.Absent() || s.Found || s.Failures != 0 {
			t.Errorf("snapshot = %+v (err %v), want absent", s, s.Err)
		}
		time.Sleep(100 * time.Millisecond)
		if _, err := os.Stat(filepath.Join(dir, "activated")); err == nil {
			t.Error("polling made the bus start timesyncd (the call lacks NO_AUTO_START)")
		}
		if logs.String() != "" {
			t.Errorf("an absent timesyncd logged:\n%s", logs.String())
		}
	})

	t.Run("synchronised then gone", func(t *testing.T) {
		t.Parallel()
		addr, _ := startBus(t, "")
		svc := fakeTimesyncd(t, addr, syncedProps())
		p, logs := newTestPoller(t, addr, ModeAuto)
		p.Poll(ctx)
		s := p.Snapshot()
		if !s.Up || !s.Found || !s.HaveData {
			t.Fatalf("snapshot = %+v (err %v), want up with data", s, s.Err)
		}
		pr := s.Props
		if pr.Server() != "ntp.example (192.0.2.1)" || pr.PollInterval != 64*time.Second || pr.Frequency != -12e-6 ||
			pr.Message.Stratum != 2 || pr.Message.RefIDString() != "198.51.100.7" || pr.Message.PacketCount != 12 {
			t.Errorf("properties = %+v", pr)
		}
		if age := s.SampleAge(time.Now()); age < 2900*time.Millisecond || age > 10*time.Second {
			t.Errorf("sample age %v, want about 3 s (from timesyncd's receive time)", age)
		}
		r := p.Reading()
		// Offset: the server is 1.5 ms ahead; the bound: 1.5 ms + delay
		// 400 µs/2 + 0.5 ms + 2 ms + 2^-23 s + 15 ppm × ~3 s.
		if !r.Found || !r.Up || !r.HasData || !r.Synchronized || r.Offset != -1500*time.Microsecond || r.Err != nil {
			t.Errorf("Reading() = %+v, want synchronised at -1.5ms", r)
		}
		if lo, hi := 4200*time.Microsecond, 4400*time.Microsecond; r.ErrorBound < lo || r.ErrorBound > hi {
			t.Errorf("ErrorBound = %v, want within [%v, %v]", r.ErrorBound, lo, hi)
		}
		if !strings.HasPrefix(r.Detail, "ntp.example (192.0.2.1), stratum 2, last reply ") {
			t.Errorf("Detail = %q", r.Detail)
		}
		// Later: the same reply, 2×64+15 s on, is stale.
		if s.Synchronized(time.Now().Add(140 * time.Second)) {
			t.Error("a reply 143 s old at a 64 s poll still counts as synchronised")
		}

		svc.Close()
		deadline := time.Now().Add(5 * time.Second)
		for p.Poll(ctx); !p.Snapshot().Absent() && time.Now().Before(deadline); p.Poll(ctx) {
			time.Sleep(20 * time.Millisecond)
		}
		s = p.Snapshot()
		if !s.Absent() || !s.Found || s.Up || s.Failures == 0 || !s.HaveData {
			t.Errorf("after timesyncd left: %+v, want found, down, absent, a failure, the old data", s)
		}
		if r := p.Reading(); r.Err == nil || r.Up {
			t.Errorf("Reading() after timesyncd left = %+v, want down with the error", r)
		}
		if !strings.Contains(logs.String(), "left the system bus") {
			t.Errorf("logs lack the departure:\n%s", logs.String())
		}
		p.Poll(ctx)
		if n := strings.Count(logs.String(), "\n"); n != 2 || !strings.Contains(logs.String(), "reading systemd-timesyncd over D-Bus") {
			t.Errorf("%d log lines, want 2 (found once, left once):\n%s", n, logs.String())
		}
	})

	t.Run("asked for every 30 s while absent", func(t *testing.T) {
		t.Parallel()
		addr, _ := startBus(t, "")
		p, _ := newTestPoller(t, addr, ModeAuto)
		pinned, _ := newTestPoller(t, addr, ModeOn)
		p.Poll(ctx)
		pinned.Poll(ctx)
		if got := p.nextPoll(); got != loop.AbsentRecheck {
			t.Errorf("absent: next poll in %v, want %v", got, loop.AbsentRecheck)
		}
		if got, want := pinned.nextPoll(), pinned.cfg.PollInterval; got != want {
			t.Errorf("pinned and absent: next poll in %v, want the poll interval %v", got, want)
		}
		fakeTimesyncd(t, addr, syncedProps())
		p.Poll(ctx)
		if got, want := p.nextPoll(), p.cfg.PollInterval; got != want || !p.Snapshot().Found {
			t.Errorf("found: next poll in %v (found %v), want the poll interval %v", got, p.Snapshot().Found, want)
		}
	})

	t.Run("no reply yet", func(t *testing.T) {
		t.Parallel()
		addr, _ := startBus(t, "")
		props := syncedProps()
		// What timesyncd publishes before its first reply: zeros, with
		// receive and transmit wrapped around.
		props["NTPMessage"] = wireMessage{RefID: []byte{0, 0, 0, 0}, Receive: 1<<64 - 2208988800*1_000_000, Transmit: 1<<64 - 2208988800*1_000_000}
		fakeTimesyncd(t, addr, props)
		p, _ := newTestPoller(t, addr, ModeAuto)
		p.Poll(ctx)
		r := p.Reading()
		if !r.Found || !r.Up || r.HasData || r.Synchronized {
			t.Errorf("Reading() = %+v, want found and up, without data", r)
		}
		if r.Detail != "no reply from ntp.example (192.0.2.1) yet" {
			t.Errorf("Detail = %q", r.Detail)
		}
	})

	t.Run("a property of another type", func(t *testing.T) {
		t.Parallel()
		addr, _ := startBus(t, "")
		props := syncedProps()
		props["NTPMessage"] = "not a struct"
		fakeTimesyncd(t, addr, props)
		p, logs := newTestPoller(t, addr, ModeAuto)
		p.Poll(ctx)
		s := p.Snapshot()
		if s.Up || s.Err == nil || !strings.Contains(s.Err.Error(), "property NTPMessage has signature s, want (uuuuittayttttbtt)") {
			t.Errorf("err = %v, want one naming NTPMessage and its signature", s.Err)
		}
		if !strings.Contains(logs.String(), "cannot read systemd-timesyncd") {
			t.Errorf("logs:\n%s", logs.String())
		}
	})

	t.Run("denied by the bus policy", func(t *testing.T) {
		t.Parallel()
		addr, _ := startBus(t, `<deny send_destination="`+BusName+`"/>`)
		fakeTimesyncd(t, addr, syncedProps())
		p, _ := newTestPoller(t, addr, ModeAuto)
		p.Poll(ctx)
		if err := p.Snapshot().Err; err == nil || !strings.Contains(err.Error(), "org.freedesktop.timesync1.conf") {
			t.Errorf("err = %v, want one pointing at timesyncd's bus policy", err)
		}
	})

	t.Run("pinned and absent", func(t *testing.T) {
		t.Parallel()
		addr, _ := startBus(t, "")
		p, logs := newTestPoller(t, addr, ModeOn)
		if r := p.Reading(); !r.Found {
			t.Errorf("a pinned timesyncd before the first poll: Found = false")
		}
		p.Poll(ctx)
		p.Poll(ctx)
		s := p.Snapshot()
		if !s.Found || s.Failures != 2 || !errors.Is(s.Err, ErrAbsent) {
			t.Errorf("snapshot = %+v, want found (pinned), 2 failures, absent", s)
		}
		if r := p.Reading(); r.Err == nil {
			t.Error("a pinned, absent timesyncd's reading has no error")
		}
		if n := strings.Count(logs.String(), "\n"); n != 1 {
			t.Errorf("%d log lines, want 1:\n%s", n, logs.String())
		}
	})
}

func TestRunStops(t *testing.T) {
	t.Parallel()
	p, _ := newTestPoller(t, "unix:path="+t.TempDir()+"/none", ModeAuto)
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error)
	go func() { done <- p.Run(ctx) }()
	for p.Snapshot().Polls == 0 {
		time.Sleep(time.Millisecond)
	}
	cancel()
	if err := <-done; err != nil {
		t.Errorf("Run() = %v", err)
	}
}

// TestRunFindsTimesyncdWhenItAppears: while timesyncd is absent the poller
// asks only every 30 s, but a timesyncd that takes its name on the bus is
// read at once: the bus tells the poller (NameOwnerChanged).
func TestRunFindsTimesyncdWhenItAppears(t *testing.T) {
	t.Parallel()
	addr, _ := startBus(t, "")
	p, _ := newTestPoller(t, addr, ModeAuto)
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error)
	go func() { done <- p.Run(ctx) }()
	defer func() { cancel(); <-done }()
	for !errors.Is(p.Snapshot().Err, ErrAbsent) {
		time.Sleep(time.Millisecond)
	}
	time.Sleep(100 * time.Millisecond) // the watch is set up right after the first connect
	start := time.Now()
	fakeTimesyncd(t, addr, syncedProps())
	for !p.Snapshot().Found {
		if time.Since(start) > 10*time.Second {
			t.Fatalf("timesyncd not found %v after it took its name (the recheck is every %v): %+v", time.Since(start), loop.AbsentRecheck, p.Snapshot())
		}
		time.Sleep(5 * time.Millisecond)
	}
	if s := p.Snapshot(); !s.Up || !s.HaveData {
		t.Errorf("found, but %+v", s)
	}
	t.Logf("found %v after timesyncd took its name", time.Since(start).Round(time.Millisecond))
}
