package ntpd

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/clockwatch/clockwatch/internal/testtool"
	"golang.org/x/sys/unix"
)

// nsEnv is set when the test runs inside its own user and network
// namespace.
const nsEnv = "CLOCKWATCH_NTPD_TEST_NETNS"

// ntpsecDir is where scripts/deps.d/40-chrony.sh unpacks ntpsec's ntpd
// (ntpsec cannot be installed beside chrony).
const ntpsecDir = "/opt/clockwatch-test/ntpsec/usr/sbin"

// TestNtpdIntegration runs ntpsec's ntpd against a test NTP server serving
// this machine's time + 2 s and reads it over mode 6. ntpd runs inside a new
// user and network namespace: it believes it is root there and can bind port
// 123 on its own loopback, but it has no capability over this machine's
// clock (CAP_SYS_TIME counts only in the initial user namespace), and its
// configuration disables clock discipline anyway.
func TestNtpdIntegration(t *testing.T) {
	testtool.Short(t)
	if os.Getenv(nsEnv) == "" {
		bin := testtool.Require(t, "ntpd", ntpsecDir)
		unshare := testtool.Require(t, "unshare")
		t.Parallel()
		args := []string{"--user", "--map-root-user", "--net", "--",
			os.Args[0], "-test.run=^TestNtpdIntegration$", "-test.v", "-test.count=1"}
		if *capture {
			args = append(args, "-capture")
		}
		cmd := exec.Command(unshare, args...)
		cmd.Env = append(os.Environ(), nsEnv+"=1", "CLOCKWATCH_NTPD_BIN="+bin)
		out, err := cmd.CombinedOutput()
		t.Logf("inside the namespace:\n%s", out)
		if err != nil {
			t.Fatalf("the namespaced test failed: %v", err)
		}
		return
	}

	setLoopbackUp(t)
	dir := t.TempDir()
	conf := filepath.Join(dir, "ntp.conf")
	// The undisciplined local clock is the reference ntpd selects: an NTP
	// server beside ntpd would need port 123, which ntpd holds exclusively
	// on the wildcard address, and ntpd refuses other 127/8 addresses.
	// "disable ntp" and "disable kernel": no clock discipline at all.
	// Without restrict lines ntpsec 1.2.2 silently drops mode 6 queries.
	if err := os.WriteFile(conf, []byte(fmt.Sprintf(`restrict default
restrict 127.0.0.1
refclock local stratum 7 minpoll 0 maxpoll 0
disable ntp
disable kernel
driftfile %s/drift
`, dir)), 0o644); err != nil {
		t.Fatal(err)
	}
	// -n: foreground. No -u: it stays "root" of its own namespace only.
	cmd := exec.Command(os.Getenv("CLOCKWATCH_NTPD_BIN"), "-n", "-c", conf, "-l", filepath.Join(dir, "ntpd.log"))
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	defer func() { cmd.Process.Kill(); cmd.Wait() }()

	c := NewClient("127.0.0.1:123", 200*time.Millisecond)
	defer c.Close()
	deadline := time.Now().Add(30 * time.Second)
	var (
		d   Data
		err error
	)
	for {
		d, err = c.Poll(context.Background())
		if err == nil && len(d.Peers) == 1 && d.Peers[0].Reach&0x7 == 0x7 {
			break
		}
		if time.Now().After(deadline) {
			log, _ := os.ReadFile(filepath.Join(dir, "ntpd.log"))
			t.Fatalf("ntpd did not reach its local clock three times within 30s: err=%v data=%+v\nlog:\n%s", err, d, log)
		}
		time.Sleep(200 * time.Millisecond)
	}
	t.Logf("system %+v", d.System)
	t.Logf("peer %+v", d.Peers[0])
	// With "disable ntp" ntpd never declares itself synchronised: it reads
	// its sources but does not run the clock discipline that would.
	want := System{Version: "ntpd ntpsec-1.2.2", Leap: 3, Stratum: 16, RefID: "INIT"}
	got := d.System
	if !strings.HasPrefix(got.Version, "ntpd ntpsec") || got.Leap != want.Leap || got.Stratum != want.Stratum || got.RefID != want.RefID || got.Synchronised() {
		t.Errorf("system %+v: want %+v, not synchronised", got, want)
	}
	if p := d.Peers[0]; p.Address != "127.127.1.0" || p.RefID != "LOCL" || p.Stratum != 7 || p.Poll != time.Second || p.Selection != "reject" {
		t.Errorf("local clock peer %+v: want 127.127.1.0, LOCL, stratum 7, 1 s polls, rejected (ntpd is not synchronised)", p)
	}
	if *capture {
		if err := captureReplies(c, dir); err != nil {
			t.Fatal(err)
		}
	}
}

// setLoopbackUp brings up lo in the new network namespace.
func setLoopbackUp(t *testing.T) {
	t.Helper()
	fd, err := unix.Socket(unix.AF_INET, unix.SOCK_DGRAM, 0)
	if err != nil {
		t.Fatal(err)
	}
	defer unix.Close(fd)
	ifr, err := unix.NewIfreq("lo")
	if err != nil {
		t.Fatal(err)
	}
	if err := unix.IoctlIfreq(fd, unix.SIOCGIFFLAGS, ifr); err != nil {
		t.Fatal(err)
	}
	ifr.SetUint16(ifr.Uint16() | unix.IFF_UP)
	if err := unix.IoctlIfreq(fd, unix.SIOCSIFFLAGS, ifr); err != nil {
		t.Fatalf("bringing lo up: %v", err)
	}
}
