package sdnotify_test

import (
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/clockwatch/clockwatch/internal/sdnotify"
	"github.com/clockwatch/clockwatch/internal/sdnotify/sdnotifytest"
)

func env(m map[string]string) func(string) string {
	return func(k string) string { return m[k] }
}

func TestFromEnv(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name        string
		socket      string
		wantEnabled bool
		wantErr     string
	}{
		{name: "unset", socket: "", wantEnabled: false},
		{name: "path", socket: "/run/systemd/notify", wantEnabled: true},
		{name: "abstract", socket: "@/org/freedesktop/systemd1/notify/123", wantEnabled: true},
		{name: "relative", socket: "notify", wantErr: `NOTIFY_SOCKET="notify": not an absolute path or an abstract '@' socket name`},
		{name: "vsock", socket: "vsock:2:1234", wantErr: `NOTIFY_SOCKET="vsock:2:1234": not an absolute path`},
		{name: "too long", socket: "/" + strings.Repeat("x", 107), wantErr: "longer than the 107 bytes"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			n, err := sdnotify.FromEnv(env(map[string]string{sdnotify.EnvNotifySocket: tc.socket}))
			if tc.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tc.wantErr) {
					t.Fatalf("FromEnv(%q) error = %v, want one containing %q", tc.socket, err, tc.wantErr)
				}
				return
			}
			if err != nil {
				t.Fatalf("FromEnv(%q): %v", tc.socket, err)
			}
			if got := n.Enabled(); got != tc.wantEnabled {
				t.Errorf("Enabled() = %v, want %v", got, tc.wantEnabled)
			}
			if got := n.Socket(); got != tc.socket {
				t.Errorf("Socket() = %q, want %q", got, tc.socket)
			}
		})
	}
}

func TestWatchdogInterval(t *testing.T) {
	t.Parallel()
	const pid = 4242
	for _, tc := range []struct {
		name    string
		env     map[string]string
		want    time.Duration
		wantErr string
	}{
		{name: "unset", env: nil, want: 0},
		{name: "usec only", env: map[string]string{"WATCHDOG_USEC": "30000000"}, want: 30 * time.Second},
		{name: "our pid", env: map[string]string{"WATCHDOG_USEC": "500000", "WATCHDOG_PID": "4242"}, want: 500 * time.Millisecond},
		{name: "another pid", env: map[string]string{"WATCHDOG_USEC": "500000", "WATCHDOG_PID": "1"}, want: 0},
		{name: "pid without usec", env: map[string]string{"WATCHDOG_PID": "4242"}, want: 0},
		{name: "bad usec", env: map[string]string{"WATCHDOG_USEC": "30s"}, wantErr: `WATCHDOG_USEC="30s": not a number of microseconds`},
		{name: "zero usec", env: map[string]string{"WATCHDOG_USEC": "0"}, wantErr: `WATCHDOG_USEC="0": must be positive`},
		{name: "huge usec", env: map[string]string{"WATCHDOG_USEC": "18446744073709551"}, wantErr: `too large`},
		{name: "bad pid", env: map[string]string{"WATCHDOG_USEC": "1", "WATCHDOG_PID": "me"}, wantErr: `WATCHDOG_PID="me": not a process ID`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			got, err := sdnotify.WatchdogInterval(env(tc.env), pid)
			if tc.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tc.wantErr) {
					t.Fatalf("WatchdogInterval() error = %v, want one containing %q", err, tc.wantErr)
				}
				return
			}
			if err != nil {
				t.Fatalf("WatchdogInterval(): %v", err)
			}
			if got != tc.want {
				t.Errorf("WatchdogInterval() = %v, want %v", got, tc.want)
			}
		})
	}
}

// TestNotify sends every kind of notification to a real unixgram socket, at a
// path and in the abstract namespace, and checks the datagrams byte for line.
func TestNotify(t *testing.T) {
	t.Parallel()
	for _, listen := range []struct {
		name string
		fn   func(testing.TB) *sdnotifytest.Socket
	}{
		{"path", sdnotifytest.Listen},
		{"abstract", sdnotifytest.ListenAbstract},
	} {
		t.Run(listen.name, func(t *testing.T) {
			t.Parallel()
			sock := listen.fn(t)
			n, err := sdnotify.FromEnv(env(map[string]string{"NOTIFY_SOCKET": sock.Addr}))
			if err != nil {
				t.Fatal(err)
			}
			for _, step := range []struct {
				name string
				send func() error
				want []string
			}{
				{"Ready", func() error { return n.Ready("") }, []string{"READY=1"}},
				{"Ready with status", func() error { return n.Ready("OK: clocks healthy") }, []string{"READY=1", "STATUS=OK: clocks healthy"}},
				{"Status", func() error { return n.Status("CRITICAL: clock stepped\nby -12.4s\n") }, []string{"STATUS=CRITICAL: clock stepped by -12.4s"}},
				{"Watchdog", n.Watchdog, []string{"WATCHDOG=1"}},
				{"Stopping", n.Stopping, []string{"STOPPING=1"}},
				{"Notify", func() error { return n.Notify("EXTEND_TIMEOUT_USEC=5000000", "STATUS=waiting") }, []string{"EXTEND_TIMEOUT_USEC=5000000", "STATUS=waiting"}},
			} {
				if err := step.send(); err != nil {
					t.Fatalf("%s: %v", step.name, err)
				}
				got, err := sock.Next(5 * time.Second)
				if err != nil {
					t.Fatalf("%s: %v", step.name, err)
				}
				if diff := cmp.Diff(step.want, got); diff != "" {
					t.Errorf("%s: datagram mismatch (-want +got):\n%s", step.name, diff)
				}
			}
			if err := n.Reloading(); err != nil {
				t.Fatalf("Reloading: %v", err)
			}
			got, err := sock.Next(5 * time.Second)
			if err != nil {
				t.Fatal(err)
			}
			if len(got) != 2 || got[0] != "RELOADING=1" || !strings.HasPrefix(got[1], "MONOTONIC_USEC=") || got[1] == "MONOTONIC_USEC=0" {
				t.Errorf("Reloading sent %q, want RELOADING=1 and a non-zero MONOTONIC_USEC", got)
			}
		})
	}
}

func TestNotifyDisabled(t *testing.T) {
	t.Parallel()
	for name, n := range map[string]*sdnotify.Notifier{"nil": nil, "zero": {}, "unset": mustNew(t, "")} {
		for _, f := range []func() error{n.Watchdog, n.Stopping, n.Reloading, func() error { return n.Ready("x") }, func() error { return n.Status("x") }} {
			if err := f(); err != nil {
				t.Errorf("%s: a disabled notifier returned %v, want nil", name, err)
			}
		}
		if n.Enabled() {
			t.Errorf("%s: Enabled() = true", name)
		}
	}
}

func mustNew(t *testing.T, socket string) *sdnotify.Notifier {
	t.Helper()
	n, err := sdnotify.New(socket)
	if err != nil {
		t.Fatal(err)
	}
	return n
}

func TestNotifyErrors(t *testing.T) {
	t.Parallel()
	sock := sdnotifytest.Listen(t)
	n := mustNew(t, sock.Addr)
	for _, tc := range []struct {
		states  []string
		wantErr string
	}{
		{[]string{"READY"}, `"READY" is not KEY=VALUE`},
		{[]string{"=1"}, `"=1" is not KEY=VALUE`},
		{[]string{"STATUS=a\nREADY=1"}, "contains a newline"},
	} {
		if err := n.Notify(tc.states...); err == nil || !strings.Contains(err.Error(), tc.wantErr) {
			t.Errorf("Notify(%q) error = %v, want one containing %q", tc.states, err, tc.wantErr)
		}
	}
	if seen := sock.Seen(); len(seen) != 0 {
		t.Errorf("invalid notifications reached the socket: %q", seen)
	}

	gone := filepath.Join(filepath.Dir(sock.Addr), "gone.sock")
	err := mustNew(t, gone).Ready("")
	if !errors.Is(err, os.ErrNotExist) || !strings.Contains(err.Error(), "connecting to "+gone) {
		t.Errorf("Ready() to a missing socket: error = %v, want ENOENT naming the socket", err)
	}
}
