package daemontest

import (
	"bufio"
	"bytes"
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"sync"
	"syscall"
	"testing"
	"time"
)

// Build compiles ./cmd/clockwatch into a temporary directory and returns
// the binary's path.
func Build(t testing.TB) string {
	t.Helper()
	bin := filepath.Join(t.TempDir(), "clockwatch")
	cmd := exec.Command("go", "build", "-o", bin, "github.com/clockwatch/clockwatch/cmd/clockwatch")
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("building clockwatch: %v\n%s", err, out)
	}
	return bin
}

// StepdownSocket returns the path of the daemon's stepdown socket, in its
// runtime directory.
func (d *Daemon) StepdownSocket() string { return filepath.Join(d.RuntimeDir, "stepdown.sock") }

// Daemon is a running clockwatch.
type Daemon struct {
	// Addr is the host:port it serves /metrics on.
	Addr string
	// StateDir and RuntimeDir are its state and runtime directories.
	StateDir, RuntimeDir string

	cmd  *exec.Cmd
	done chan struct{}
	err  error

	mu  sync.Mutex
	log bytes.Buffer
}

var listeningRE = regexp.MustCompile(`msg="Listening on" address=(\S+)`)

// Options says how to run clockwatch.
type Options struct {
	// Addr is the address to listen on; a free loopback port when empty.
	// Give a stopped daemon's Addr to restart it where Prometheus scrapes.
	Addr string
	// StateDir is the state directory (STATE_DIRECTORY: the step journal
	// and the clock epoch); a new temporary directory when empty, never the
	// machine's /var/lib/clockwatch.
	StateDir string
	// RuntimeDir is the runtime directory (RUNTIME_DIRECTORY: the stepdown
	// socket); a new temporary directory when empty, never /run/clockwatch.
	RuntimeDir string
	// Args are more command-line arguments.
	Args []string
	// Env are more environment variables (NAME=value).
	Env []string
	// Stepdown, when set, is a listening unix socket passed to the daemon
	// as systemd's socket activation does (fd 3, LISTEN_FDNAMES=stepdown):
	// a test can connect a client before the daemon runs at all.
	Stepdown *os.File
}

// Start runs bin and waits until it logs the address it listens on. It is
// stopped when the test ends.
func Start(t testing.TB, bin string, o Options) *Daemon {
	t.Helper()
	if o.Addr == "" {
		o.Addr = "127.0.0.1:0"
	}
	if o.StateDir == "" {
		o.StateDir = t.TempDir()
	}
	if o.RuntimeDir == "" {
		o.RuntimeDir = t.TempDir()
	}
	d := &Daemon{done: make(chan struct{}), StateDir: o.StateDir, RuntimeDir: o.RuntimeDir}
	args := append([]string{"--web.listen-address=" + o.Addr}, o.Args...)
	d.cmd = exec.Command(bin, args...)
	if o.Stepdown != nil {
		// systemd sets LISTEN_PID to the service's own pid: a shell that
		// execs the daemon has it as $$.
		d.cmd = exec.Command("/bin/sh", append([]string{"-c", `LISTEN_PID=$$ LISTEN_FDS=1 LISTEN_FDNAMES=stepdown exec "$0" "$@"`, bin}, args...)...)
		d.cmd.ExtraFiles = []*os.File{o.Stepdown}
	}
	d.cmd.Env = append(os.Environ(), "STATE_DIRECTORY="+o.StateDir, "RUNTIME_DIRECTORY="+o.RuntimeDir)
	d.cmd.Env = append(d.cmd.Env, o.Env...)
	d.cmd.SysProcAttr = &syscall.SysProcAttr{Pdeathsig: syscall.SIGKILL}
	stderr, err := d.cmd.StderrPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := d.cmd.Start(); err != nil {
		t.Fatalf("starting clockwatch: %v", err)
	}
	addrc := make(chan string, 1)
	go func() {
		sc := bufio.NewScanner(stderr)
		for sc.Scan() {
			d.mu.Lock()
			d.log.WriteString(sc.Text() + "\n")
			d.mu.Unlock()
			if m := listeningRE.FindStringSubmatch(sc.Text()); m != nil {
				select {
				case addrc <- m[1]:
				default:
				}
			}
		}
		d.err = d.cmd.Wait()
		close(d.done)
	}()
	t.Cleanup(func() {
		if err := d.Stop(); err != nil {
			t.Errorf("%v; log:\n%s", err, d.Log())
		}
	})
	select {
	case d.Addr = <-addrc:
	case <-d.done:
		t.Fatalf("clockwatch exited at start (%v); log:\n%s", d.err, d.Log())
	case <-time.After(20 * time.Second):
		t.Fatalf("clockwatch did not log its listening address within 20s; log:\n%s", d.Log())
	}
	return d
}

// PID returns the process ID.
func (d *Daemon) PID() int { return d.cmd.Process.Pid }

// Log returns what clockwatch logged so far.
func (d *Daemon) Log() string {
	d.mu.Lock()
	defer d.mu.Unlock()
	return d.log.String()
}

// Stop sends SIGTERM to the daemon's PID and waits for it to exit (killing
// it after 10 s). Stopping a stopped daemon does nothing.
func (d *Daemon) Stop() error {
	select {
	case <-d.done:
		return nil
	default:
	}
	if err := d.cmd.Process.Signal(syscall.SIGTERM); err != nil && !errors.Is(err, os.ErrProcessDone) {
		return err
	}
	select {
	case <-d.done:
		var exit *exec.ExitError
		if errors.As(d.err, &exit) {
			return errors.New("clockwatch exited with " + exit.String() + " on SIGTERM")
		}
		return nil
	case <-time.After(10 * time.Second):
		_ = d.cmd.Process.Kill()
		<-d.done
		return errors.New("clockwatch did not stop within 10s of SIGTERM; killed")
	}
}
