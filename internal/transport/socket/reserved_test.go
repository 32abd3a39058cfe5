package socket_test

import (
	"context"
	"errors"
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"golang.org/x/sys/unix"

	"github.com/clockwatch/clockwatch/internal/transport/socket"
	"github.com/clockwatch/clockwatch/stepdown"
)

// TestReservedSocketFile: the reserved socket lies beside the stepdown
// socket (or where configured) with mode 0600, 0660 with a group, and goes
// with its lock file when the server closes; "none" makes none.
func TestReservedSocketFile(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name     string
		reserved string // stepdown.reserved_socket; "other" is a path of the test's
		group    bool
		mode     os.FileMode // 0: no file
	}{
		{"default", "", false, 0o600},
		{"with a group", "", true, 0o660},
		{"elsewhere", "other", false, 0o600},
		{"off", socket.ReservedOff, false, 0},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			cfg := testConfig(t)
			cfg.Mode = "0666"
			want := stepdown.ReservedPath(cfg.Socket)
			switch tc.reserved {
			case "other":
				want = filepath.Join(t.TempDir(), "elsewhere", "r.sock")
				cfg.ReservedSocket = want
			case socket.ReservedOff:
				cfg.ReservedSocket = tc.reserved
				want = ""
			}
			if tc.group {
				cfg.ReservedGroup = strconv.Itoa(os.Getegid())
			}
			s, _ := newServer(t, cfg, socket.Options{})
			if err := s.Listen(); err != nil {
				t.Fatal(err)
			}
			if got := s.ReservedAddr(); got != want {
				t.Errorf("ReservedAddr %q, want %q", got, want)
			}
			if tc.mode == 0 {
				entries, _ := os.ReadDir(filepath.Dir(cfg.Socket))
				for _, e := range entries {
					if strings.Contains(e.Name(), "reserved") {
						t.Errorf("stepdown.reserved_socket none, and %s was made", e.Name())
					}
				}
				s.Close()
				return
			}
			st, err := os.Stat(want)
			if err != nil {
				t.Fatal(err)
			}
			if st.Mode()&os.ModeSocket == 0 || st.Mode().Perm() != tc.mode {
				t.Errorf("reserved socket's mode %s, want a socket with %04o", st.Mode(), tc.mode)
			}
			if uid := st.Sys().(*syscall.Stat_t).Uid; uid != uint32(os.Geteuid()) {
				t.Errorf("reserved socket owned by uid %d, want clockwatch's, %d", uid, os.Geteuid())
			}
			if gid := st.Sys().(*syscall.Stat_t).Gid; tc.group && gid != uint32(os.Getegid()) {
				t.Errorf("reserved socket's group %d, want %d", gid, os.Getegid())
			}
			if err := s.Close(); err != nil {
				t.Fatal(err)
			}
			for _, f := range []string{want, want + ".lock"} {
				if _, err := os.Stat(f); !errors.Is(err, os.ErrNotExist) {
					t.Errorf("%s left behind: %v", f, err)
				}
			}
		})
	}
}

// TestReservedSocketServes: a client of the reserved socket gets the same
// hello and events as one of the stepdown socket.
func TestReservedSocketServes(t *testing.T) {
	t.Parallel()
	cfg := testConfig(t)
	s, _ := start(t, cfg, socket.Options{})
	for _, path := range []string{s.Addr(), s.ReservedAddr()} {
		nc, err := net.Dial("unix", path)
		if err != nil {
			t.Fatal(err)
		}
		defer nc.Close()
		c := stepdown.NewConn(nc)
		if m := next(t, c); m.Type != stepdown.TypeHello {
			t.Fatalf("%s: first message %v, want a hello", path, m)
		}
		c.Send(stepdown.Message{Type: stepdown.TypeDrill, HoldSeconds: 0.01})
		if m := next(t, c); m.Type != stepdown.TypeStepdown {
			t.Fatalf("%s: after a drill %v, want its stepdown", path, m)
		}
		if m := next(t, c); m.Type != stepdown.TypeResume {
			t.Fatalf("%s: %v, want the drill's resume", path, m)
		}
	}
}

// TestReservedSocketBesideAFullBacklog: with the stepdown socket's accept
// queue full and its accept loop stuck (as a connection flood from another
// uid leaves them: refusals are paced), a client of the reserved socket
// still gets its hello at once. Before the reserved socket, a root client
// waited behind the flood's backlog (about 250 ms at 16,384 refusals a
// second).
func TestReservedSocketBesideAFullBacklog(t *testing.T) {
	t.Parallel()
	cfg := testConfig(t)
	cfg.Mode = "0666"
	release := make(chan struct{})
	opts := socket.Options{PeerCred: func(fd int) (socket.Cred, error) {
		if sa, err := unix.Getsockname(fd); err == nil && sa.(*unix.SockaddrUnix).Name == cfg.Socket {
			<-release // the stepdown socket's accept loop is stuck
			return socket.Cred{PID: 1, UID: 4242, GID: 4242}, nil
		}
		return socket.PeerCred(fd)
	}}
	s, _ := start(t, cfg, opts)
	t.Cleanup(func() { close(release) }) // before the server stops
	var held []net.Conn
	t.Cleanup(func() {
		for _, c := range held {
			c.Close()
		}
	})
	full := false
	for range 2 * 65536 {
		c, err := net.Dial("unix", s.Addr())
		if errors.Is(err, syscall.EAGAIN) {
			full = true
			break
		}
		if err != nil {
			t.Fatal(err)
		}
		held = append(held, c)
	}
	if !full {
		t.Fatalf("the stepdown socket's backlog took %d connections and is not full", len(held))
	}
	start := time.Now()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	c, err := stepdown.Dial(ctx, s.Addr())
	if err != nil {
		t.Fatalf("dialling beside a full backlog of %d: %v", len(held), err)
	}
	defer c.Close()
	if m := next(t, c); m.Type != stepdown.TypeHello {
		t.Fatalf("first message %v, want a hello", m)
	}
	if d := time.Since(start); d > time.Second {
		t.Errorf("the hello on the reserved socket took %s beside a full backlog of %d", d, len(held))
	}
}

const reservedChildEnv = "STEPDOWN_RESERVED_CHILD"

// TestReservedSocketClosedToOthers: a uid other than clockwatch's, not in
// stepdown.reserved_group, cannot connect to the reserved socket (the
// kernel refuses it: EACCES), and stepdown.Dial takes it to the stepdown
// socket instead. Runs as root, which may start a child as another uid.
func TestReservedSocketClosedToOthers(t *testing.T) {
	if os.Getenv(reservedChildEnv) != "" {
		reservedChild()
		return
	}
	t.Parallel()
	if os.Geteuid() != 0 {
		t.Skip("needs root to run a child as another uid")
	}
	// A directory, and a copy of this test binary, that the child's uid
	// may reach (t.TempDir's and go test's are root's alone).
	dir, err := os.MkdirTemp("", "reserved-")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.RemoveAll(dir) })
	if err := os.Chmod(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	bin := filepath.Join(dir, "socket.test")
	if b, err := os.ReadFile(os.Args[0]); err != nil || os.WriteFile(bin, b, 0o755) != nil {
		t.Fatalf("copying the test binary: %v", err)
	}
	for i, tc := range []struct {
		name   string
		group  string   // stepdown.reserved_group
		groups []uint32 // the child's supplementary groups
		want   string
	}{
		{"another uid", "", nil, "reserved: permission denied; dial: stepdown socket"},
		{"another uid, in the socket's group", "", []uint32{0}, "reserved: permission denied; dial: stepdown socket"},
		{"a member of stepdown.reserved_group", "4343", []uint32{4343}, "reserved: connected; dial: stepdown socket"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			cfg := testConfig(t)
			cfg.Socket = filepath.Join(dir, fmt.Sprintf("s%d.sock", i))
			cfg.Mode, cfg.Group = "0666", "0"
			cfg.ReservedGroup = tc.group
			s, _ := start(t, cfg, socket.Options{})
			cmd := exec.Command(bin, "-test.run=^TestReservedSocketClosedToOthers$")
			cmd.Env = append(os.Environ(), reservedChildEnv+"="+s.Addr())
			cmd.SysProcAttr = &syscall.SysProcAttr{Credential: &syscall.Credential{Uid: 65534, Gid: 65534, Groups: tc.groups}}
			out, err := cmd.CombinedOutput()
			if err != nil {
				t.Fatalf("child: %v\n%s", err, out)
			}
			if got := strings.TrimSpace(string(out)); !strings.HasPrefix(got, tc.want) {
				t.Errorf("the child says %q, want %q", got, tc.want)
			}
		})
	}
}

// reservedChild connects to the reserved socket beside the stepdown socket
// named in its environment, then dials with stepdown.Dial, and says what
// happened to each.
func reservedChild() {
	path := os.Getenv(reservedChildEnv)
	res := "connected"
	if c, err := net.Dial("unix", stepdown.ReservedPath(path)); err != nil {
		res = "other error: " + err.Error()
		if errors.Is(err, syscall.EACCES) {
			res = "permission denied"
		}
	} else {
		c.Close()
	}
	dial := "stepdown socket"
	c, err := stepdown.Dial(context.Background(), path)
	if err != nil {
		dial = err.Error()
	} else {
		c.Close()
	}
	fmt.Printf("reserved: %s; dial: %s\n", res, dial)
	os.Exit(0)
}

// TestReservedSocketTooLong: when the default path beside the stepdown
// socket would be longer than a unix socket's may be, there is no reserved
// socket and the stepdown socket still starts.
func TestReservedSocketTooLong(t *testing.T) {
	t.Parallel()
	cfg := testConfig(t)
	dir := filepath.Dir(cfg.Socket)
	cfg.Socket = filepath.Join(dir, strings.Repeat("a", 107-len(dir)-1-len(".sock"))+".sock")
	if len(cfg.Socket) != 107 {
		t.Fatalf("socket path of %d bytes, want 107", len(cfg.Socket))
	}
	s, _ := start(t, cfg, socket.Options{})
	if got := s.ReservedAddr(); got != "" {
		t.Errorf("ReservedAddr %q, want none", got)
	}
	dial(t, s.Addr())
}
