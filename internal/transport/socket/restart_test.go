package socket_test

import (
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/clockwatch/clockwatch/internal/announce"
	"github.com/clockwatch/clockwatch/internal/policy"
	"github.com/clockwatch/clockwatch/internal/transport/socket"
	"github.com/clockwatch/clockwatch/stepdown"
)

const serveChildEnv = "STEPDOWN_SERVE_CHILD"

// TestKilledDaemonRestart kills a serving process with SIGKILL, which leaves
// its socket file behind, starts a new server on the same path, and checks
// that it replaces the stale socket and that a subscriber reconnects and gets
// a hello with the persisted epoch.
func TestKilledDaemonRestart(t *testing.T) {
	if spec := os.Getenv(serveChildEnv); spec != "" {
		serveChild(spec)
		return
	}
	t.Parallel()
	path := filepath.Join(t.TempDir(), "sd.sock")
	child := exec.Command(os.Args[0], "-test.run=^TestKilledDaemonRestart$")
	child.Env = append(os.Environ(), serveChildEnv+"="+path+",7")
	child.Stderr = os.Stderr
	if err := child.Start(); err != nil {
		t.Fatal(err)
	}
	defer func() { child.Process.Kill(); child.Wait() }()

	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	sub := stepdown.Subscribe(ctx, stepdown.Options{Path: path, MinBackoff: 10 * time.Millisecond, MaxBackoff: 50 * time.Millisecond})
	if err := sub.WaitOK(ctx); err != nil {
		t.Fatal(err)
	}
	if _, m := sub.State(); m.Epoch != 7 {
		t.Fatalf("first hello: %+v", m)
	}
	guard, release := sub.Guard(ctx)
	defer release()

	child.Process.Kill()
	child.Wait()
	<-guard.Done() // the subscriber knows at once: the connection broke
	if st, _ := sub.State(); st != stepdown.StateUnknown {
		t.Fatalf("state after the kill: %s", st)
	}
	if _, err := os.Lstat(path); err != nil {
		t.Fatalf("a killed server should leave its socket file: %v", err)
	}

	cfg := testConfig(t)
	cfg.Socket = path
	start(t, cfg, socket.Options{}, announce.Options{Epoch: 7}) // the epoch the journal persisted
	if err := sub.WaitOK(ctx); err != nil {
		t.Fatal(err)
	}
	if _, m := sub.State(); m.Epoch != 7 { // the hello, or the resume that follows a hello in state starting
		t.Fatalf("hello after the restart: %+v", m)
	}
}

// serveChild runs a server on the socket and epoch in spec until killed.
func serveChild(spec string) {
	path, e, _ := strings.Cut(spec, ",")
	epoch, _ := strconv.ParseUint(e, 10, 64)
	cfg := socket.DefaultConfig()
	cfg.Socket = path
	cfg.Heartbeat = 20 * time.Millisecond
	ann := announce.New(policy.DefaultConfig(), announce.Options{Epoch: epoch})
	s, err := socket.New(cfg, ann, socket.Options{})
	if err != nil {
		os.Exit(1)
	}
	go func() {
		<-s.Ready()
		ann.ProbeOK("test")
	}()
	s.Run(context.Background())
	os.Exit(1)
}
