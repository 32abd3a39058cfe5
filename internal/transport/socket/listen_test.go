package socket_test

import (
	"bufio"
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"

	"github.com/clockwatch/clockwatch/internal/announce"
	"github.com/clockwatch/clockwatch/internal/policy"
	"github.com/clockwatch/clockwatch/internal/transport/socket"
	"github.com/clockwatch/clockwatch/stepdown"
)

func listenConfig(t *testing.T) socket.Config {
	cfg := socket.DefaultConfig()
	cfg.Socket = filepath.Join(t.TempDir(), "missing", "dir", "sd.sock")
	return cfg
}

func TestListenCreatesDirectoryModeAndGroup(t *testing.T) {
	t.Parallel()
	cfg := listenConfig(t)
	cfg.Mode = "0640"
	cfg.Group = strconv.Itoa(os.Getegid())
	l, err := socket.Listen(cfg)
	if err != nil {
		t.Fatal(err)
	}
	st, err := os.Stat(cfg.Socket)
	if err != nil {
		t.Fatal(err)
	}
	if st.Mode()&os.ModeSocket == 0 || st.Mode().Perm() != 0o640 {
		t.Errorf("socket mode %s, want a socket with 0640", st.Mode())
	}
	if gid := st.Sys().(*syscall.Stat_t).Gid; gid != uint32(os.Getegid()) {
		t.Errorf("group %d", gid)
	}
	l.Close()
	if _, err := os.Stat(cfg.Socket); !os.IsNotExist(err) {
		t.Errorf("socket file left behind: %v", err)
	}
	if _, err := os.Stat(cfg.Socket + ".lock"); !os.IsNotExist(err) {
		t.Errorf("lock file left behind: %v", err)
	}
}

func TestListenReplacesOnlyStaleSockets(t *testing.T) {
	t.Parallel()
	t.Run("stale", func(t *testing.T) {
		t.Parallel()
		cfg := listenConfig(t)
		os.MkdirAll(filepath.Dir(cfg.Socket), 0o755)
		old, err := net.ListenUnix("unix", &net.UnixAddr{Name: cfg.Socket, Net: "unix"})
		if err != nil {
			t.Fatal(err)
		}
		old.SetUnlinkOnClose(false)
		old.Close() // a crashed clockwatch leaves its socket file
		l, err := socket.Listen(cfg)
		if err != nil {
			t.Fatalf("stale socket not replaced: %v", err)
		}
		l.Close()
	})
	t.Run("live", func(t *testing.T) {
		t.Parallel()
		cfg := listenConfig(t)
		os.MkdirAll(filepath.Dir(cfg.Socket), 0o755)
		other, err := net.Listen("unix", cfg.Socket)
		if err != nil {
			t.Fatal(err)
		}
		defer other.Close()
		if _, err := socket.Listen(cfg); err == nil || !strings.Contains(err.Error(), "is live") {
			t.Fatalf("got %v, want a refusal", err)
		}
		if c, err := net.Dial("unix", cfg.Socket); err != nil {
			t.Fatalf("the live socket was harmed: %v", err)
		} else {
			c.Close()
		}
	})
	t.Run("another clockwatch", func(t *testing.T) {
		t.Parallel()
		cfg := listenConfig(t)
		first, err := socket.Listen(cfg)
		if err != nil {
			t.Fatal(err)
		}
		defer first.Close()
		if _, err := socket.Listen(cfg); err == nil || !strings.Contains(err.Error(), "another clockwatch holds") {
			t.Fatalf("got %v", err)
		}
	})
	t.Run("not a socket", func(t *testing.T) {
		t.Parallel()
		cfg := listenConfig(t)
		os.MkdirAll(filepath.Dir(cfg.Socket), 0o755)
		os.WriteFile(cfg.Socket, []byte("precious"), 0o644)
		if _, err := socket.Listen(cfg); err == nil || !strings.Contains(err.Error(), "is a regular file, not a socket") {
			t.Fatalf("got %v, want it to say a regular file is there", err)
		}
		if _, err := os.Stat(cfg.Socket + ".lock"); !os.IsNotExist(err) {
			t.Errorf("a refused start left its lock file: %v", err)
		}
		if b, _ := os.ReadFile(cfg.Socket); string(b) != "precious" {
			t.Fatal("file replaced")
		}
	})
}

func TestActivatedWithoutOurSocket(t *testing.T) {
	t.Parallel()
	for _, env := range []map[string]string{
		{},
		{"LISTEN_PID": "1", "LISTEN_FDS": "1", "LISTEN_FDNAMES": "stepdown"}, // for another process
		{"LISTEN_PID": "77", "LISTEN_FDS": "0"},
		{"LISTEN_PID": "77", "LISTEN_FDS": "1"},                                    // unnamed: maybe the HTTP socket
		{"LISTEN_PID": "77", "LISTEN_FDS": "2", "LISTEN_FDNAMES": "http:other"},    // not ours
		{"LISTEN_PID": "77", "LISTEN_FDS": "1", "LISTEN_FDNAMES": "http:stepdown"}, // named beyond LISTEN_FDS
	} {
		_, ok, err := socket.Activated(func(k string) string { return env[k] }, 77)
		if ok || err != nil {
			t.Errorf("%v: ok %v, err %v", env, ok, err)
		}
	}
}

const activationChildEnv = "STEPDOWN_ACTIVATION_CHILD"

// TestSocketActivation hands a listening socket to a child process as fd 3,
// the way systemd does, and checks the child serves on it.
func TestSocketActivation(t *testing.T) {
	if os.Getenv(activationChildEnv) != "" {
		activationChild()
		return
	}
	t.Parallel()
	path := filepath.Join(t.TempDir(), "activated.sock")
	l, err := net.ListenUnix("unix", &net.UnixAddr{Name: path, Net: "unix"})
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	f, err := l.File()
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	cmd := exec.Command(os.Args[0], "-test.run=^TestSocketActivation$")
	cmd.Env = append(os.Environ(), activationChildEnv+"=1", "LISTEN_FDS=2", "LISTEN_FDNAMES=http:stepdown")
	// fd 3 stands for another activated socket (the HTTP one); fd 4 is ours.
	other, err := os.Open(os.DevNull)
	if err != nil {
		t.Fatal(err)
	}
	defer other.Close()
	cmd.ExtraFiles = []*os.File{other, f}
	out, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	defer cmd.Wait()
	defer cmd.Process.Kill()
	c, err := net.Dial("unix", path)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	line, err := bufio.NewReader(c).ReadString('\n')
	if err != nil || !strings.Contains(line, `"type":"hello"`) {
		t.Fatalf("got %q, %v", line, err)
	}
	// The child makes the reserved socket itself, beside the one systemd
	// passed.
	rc, err := net.Dial("unix", stepdown.ReservedPath(path))
	if err != nil {
		t.Fatalf("the reserved socket beside the activated one: %v", err)
	}
	defer rc.Close()
	if line, err := bufio.NewReader(rc).ReadString('\n'); err != nil || !strings.Contains(line, `"type":"hello"`) {
		t.Fatalf("reserved socket: got %q, %v", line, err)
	}
	_ = out
}

// activationChild serves one hello on the activated socket. LISTEN_PID is
// this process's pid, which the parent cannot know before starting it.
func activationChild() {
	getenv := func(k string) string {
		if k == "LISTEN_PID" {
			return strconv.Itoa(os.Getpid())
		}
		return os.Getenv(k)
	}
	cfg := socket.DefaultConfig()
	cfg.Socket = filepath.Join(os.TempDir(), "clockwatch-activation-unused.sock") // never the real one
	s, err := socket.New(cfg, announce.New(policy.DefaultConfig(), announce.Options{}), socket.Options{Getenv: getenv})
	if err != nil {
		fmt.Println(err)
		os.Exit(1)
	}
	if err := runForever(s); err != nil {
		fmt.Println(err)
		os.Exit(1)
	}
}
