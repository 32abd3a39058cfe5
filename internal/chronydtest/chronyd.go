package chronydtest

import (
	"bytes"
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/clockwatch/clockwatch/internal/ntptest"
	"github.com/clockwatch/clockwatch/internal/testtool"
)

// Options says what the chronyd under test is given.
type Options struct {
	// Sources is the number of NTP servers chronyd is given, each on its
	// own loopback address (127.0.0.11, 127.0.0.12, ...). Zero means one.
	Sources int
	// CmdPort, when not zero, also opens chronyd's command port on
	// 127.0.0.1 with that UDP port number (monitoring over UDP).
	CmdPort int
	// Extra lines appended to chrony.conf.
	Extra []string
	// Silent starts the NTP servers without answering, so that chronyd
	// starts unsynchronised; call SetSilent(false) to let it synchronise.
	Silent bool
	// GroupAccess lets chronyd's group (root's, gid 0) use the command
	// socket: the directory is 0770 and chronyd runs with umask 007, as
	// Debian's chronyd does for its _chrony group, so that a non-root
	// reader in that group (a container) can connect.
	GroupAccess bool
	// Drift, when set, is written to chronyd's drift file before it
	// starts ("FREQ SKEW" in ppm, as chronyd writes it): a host where
	// chronyd ran before. Without it chronyd's first update has a skew of
	// 10⁶ ppm, so its error bound grows by a second a second until the
	// next.
	Drift string
	// Poll, when set, replaces the options of each server line ("iburst
	// minpoll -4 maxpoll -4": an update every 1/16 s); "iburst" gives
	// chrony's default polls, as on a real host (an update a minute or
	// more apart once synchronised).
	Poll string
}

// Chronyd is a chronyd process run by a test, and the NTP servers it is
// synchronised to.
type Chronyd struct {
	// Dir is the temporary directory holding the config, logs and socket.
	Dir string
	// Socket is the path of chronyd's command socket.
	Socket string
	// Conf is the path of the chrony.conf written for it.
	Conf string
	// PIDFile is the path of the pid file it writes (chrony.pid_file).
	PIDFile string
	// Servers are the NTP servers chronyd polls; change their offset with
	// SetOffset.
	Servers []*ntptest.Server

	t    testing.TB
	bin  string
	cmd  *exec.Cmd
	done chan struct{}
	log  bytes.Buffer
	// umask, when set, is the umask chronyd starts with (GroupAccess).
	umask string
}

// Start writes a configuration, starts the NTP servers and chronyd, and
// waits until chronyd's command socket exists. Everything is stopped when the
// test ends.
func Start(t testing.TB, o Options) *Chronyd {
	t.Helper()
	bin := testtool.Require(t, "chronyd")
	if o.Sources == 0 {
		o.Sources = 1
	}
	dir, err := os.MkdirTemp("", "chronyd-test-")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.RemoveAll(dir) })
	// chronyd refuses a socket directory that others can write to.
	mode := os.FileMode(0o700)
	if o.GroupAccess {
		mode = 0o770
	}
	if err := os.Chmod(dir, mode); err != nil {
		t.Fatal(err)
	}
	c := &Chronyd{Dir: dir, Socket: filepath.Join(dir, "chronyd.sock"), Conf: filepath.Join(dir, "chrony.conf"),
		PIDFile: filepath.Join(dir, "chronyd.pid"), t: t, bin: bin}
	if o.GroupAccess {
		c.umask = "007"
	}
	var conf strings.Builder
	for i := range o.Sources {
		ip := fmt.Sprintf("127.0.0.%d", 11+i)
		s, err := ntptest.Start(net.JoinHostPort(ip, "0"))
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { s.Close() })
		s.SetSilent(o.Silent)
		c.Servers = append(c.Servers, s)
		poll := o.Poll
		if poll == "" {
			poll = "iburst minpoll -4 maxpoll -4"
		}
		fmt.Fprintf(&conf, "server %s port %d %s\n", ip, s.Addr().Port, poll)
	}
	fmt.Fprintf(&conf, "bindacqaddress 127.0.0.1\nport 0\n")
	if o.CmdPort != 0 {
		fmt.Fprintf(&conf, "cmdport %d\nbindcmdaddress 127.0.0.1\n", o.CmdPort)
	} else {
		fmt.Fprintf(&conf, "cmdport 0\n")
	}
	fmt.Fprintf(&conf, "bindcmdaddress %s\npidfile %s\ndriftfile %s\n", c.Socket,
		c.PIDFile, filepath.Join(dir, "drift"))
	for _, l := range o.Extra {
		conf.WriteString(l + "\n")
	}
	if err := os.WriteFile(c.Conf, []byte(conf.String()), 0o600); err != nil {
		t.Fatal(err)
	}
	if o.Drift != "" {
		if err := os.WriteFile(filepath.Join(dir, "drift"), []byte(o.Drift+"\n"), 0o600); err != nil {
			t.Fatal(err)
		}
	}
	c.Restart()
	t.Cleanup(c.Stop)
	return c
}

// SetOffset makes every NTP server serve this machine's time plus d.
func (c *Chronyd) SetOffset(d time.Duration) {
	for _, s := range c.Servers {
		s.SetOffset(d)
	}
}

// SetSilent makes every NTP server ignore chronyd (true) or answer again.
func (c *Chronyd) SetSilent(v bool) {
	for _, s := range c.Servers {
		s.SetSilent(v)
	}
}

// PID returns the process ID of the running chronyd, or 0.
func (c *Chronyd) PID() int {
	if c.cmd == nil || c.cmd.Process == nil {
		return 0
	}
	return c.cmd.Process.Pid
}

// Restart starts chronyd (again) and waits for its command socket.
func (c *Chronyd) Restart() {
	c.t.Helper()
	c.Stop()
	// -x: never touch the clock. -n: foreground. -u root: no privilege drop
	// (the test's directories are root's). -L 0 -l: log to a file.
	args := []string{c.bin, "-n", "-x", "-u", "root", "-f", c.Conf, "-L", "0", "-l", filepath.Join(c.Dir, "chronyd.log")}
	if c.umask != "" {
		// The umask is the process's, not a goroutine's: set it in a shell
		// that then becomes chronyd (exec keeps the PID), not in the test.
		args = append([]string{"/bin/sh", "-c", `umask "$0" && exec "$@"`, c.umask}, args...)
	}
	cmd := exec.Command(args[0], args[1:]...)
	cmd.Stdout = &c.log
	cmd.Stderr = &c.log
	if err := cmd.Start(); err != nil {
		c.t.Fatalf("starting chronyd: %v", err)
	}
	c.cmd = cmd
	c.done = make(chan struct{})
	go func(done chan struct{}) { cmd.Wait(); close(done) }(c.done)
	deadline := time.Now().Add(10 * time.Second)
	for {
		if _, err := os.Stat(c.Socket); err == nil {
			return
		}
		select {
		case <-c.done:
			c.t.Fatalf("chronyd exited at start: %s\n%s", c.log.String(), c.Logs())
		default:
		}
		if time.Now().After(deadline) {
			c.t.Fatalf("chronyd's socket %s did not appear within 10s: %s", c.Socket, c.Logs())
		}
		time.Sleep(5 * time.Millisecond)
	}
}

// Stop kills chronyd (this test's own process, by PID) and waits for it.
func (c *Chronyd) Stop() {
	if c.cmd == nil {
		return
	}
	c.cmd.Process.Kill()
	<-c.done
	c.cmd = nil
	// chronyd does not remove its socket when killed.
	os.Remove(c.Socket)
}

// Logs returns chronyd's log file.
func (c *Chronyd) Logs() string {
	b, _ := os.ReadFile(filepath.Join(c.Dir, "chronyd.log"))
	return string(b)
}

// Chronyc runs chronyc against this chronyd's socket with the given
// arguments in CSV mode (-c) and returns its fields, for checking
// clockwatch's readings against chrony's own client in tests only.
func (c *Chronyd) Chronyc(args ...string) ([][]string, error) {
	bin, err := exec.LookPath("chronyc")
	if err != nil {
		return nil, err
	}
	out, err := exec.Command(bin, append([]string{"-h", c.Socket, "-c", "-n"}, args...)...).CombinedOutput()
	if err != nil {
		return nil, fmt.Errorf("chronyc %v: %w: %s", args, err, out)
	}
	var rows [][]string
	for _, l := range strings.Split(strings.TrimSpace(string(out)), "\n") {
		rows = append(rows, strings.Split(l, ","))
	}
	return rows, nil
}

// ParseFloat is strconv.ParseFloat for chronyc fields, failing the test on
// error.
func ParseFloat(t testing.TB, s string) float64 {
	t.Helper()
	f, err := strconv.ParseFloat(s, 64)
	if err != nil {
		t.Fatalf("parsing chronyc field %q: %v", s, err)
	}
	return f
}
