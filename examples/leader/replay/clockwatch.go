package replay

import (
	"bufio"
	"bytes"
	"context"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"os/exec"
	"path/filepath"
	"time"

	"github.com/clockwatch/clockwatch/examples/leader"
	"github.com/clockwatch/clockwatch/stepdown"
)

// Daemon is one node's clockwatch: a clockwatch daemon process with its own
// stepdown socket, state directory and web port. Drills go through the
// clockwatch command line.
type Daemon struct {
	// Node names the node this clockwatch watches.
	Node string
	// Socket is its stepdown socket.
	Socket string

	bin  string
	log  *slog.Logger
	proc *Proc
}

// daemonConfig is the configuration of a replay clockwatch: its own state
// directory, the stepdown socket on, and only the step trigger (nothing here
// steps the clock; the other triggers would react to this machine having no
// NTP).
const daemonConfig = `journal:
  dir: %s
stepdown:
  enabled: true
  socket: %s
  heartbeat: 200ms
  hold_down: 1s
  triggers:
    offset: {enabled: false}
    unsynchronized: {enabled: false}
    error_bound: {enabled: false}
`

// StartDaemon starts node's clockwatch with its socket and state in
// dir/clockwatch-node,
// using the clockwatch binary bin.
func StartDaemon(ctx context.Context, bin, dir, node string, log *slog.Logger) (*Daemon, error) {
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	nd := filepath.Join(dir, "clockwatch-"+node)
	if err := os.MkdirAll(nd, 0o700); err != nil {
		return nil, fmt.Errorf("clockwatch directory: %w", err)
	}
	d := &Daemon{Node: node, Socket: filepath.Join(nd, "stepdown.sock"), bin: bin, log: log}
	cfgPath := filepath.Join(nd, "clockwatch.yml")
	if err := os.WriteFile(cfgPath, fmt.Appendf(nil, daemonConfig, filepath.Join(nd, "state"), d.Socket), 0o600); err != nil {
		return nil, fmt.Errorf("clockwatch config: %w", err)
	}
	cmd := exec.Command(bin, "--config.file="+cfgPath, "--web.listen-address=127.0.0.1:0")
	// Everything a daemon keeps at run time (its bounded-time segment too)
	// under its own directory: never the machine's /run/clockwatch, and
	// not shared by the nodes.
	cmd.Env = append(os.Environ(), "RUNTIME_DIRECTORY="+nd, "STATE_DIRECTORY="+filepath.Join(nd, "state"))
	p, err := start(cmd, filepath.Join(nd, "clockwatch.log"))
	if err != nil {
		return nil, err
	}
	d.proc = p
	if err := poll(ctx, p, 30*time.Second, "clockwatch of node "+node, d.ready); err != nil {
		p.Stop()
		return nil, fmt.Errorf("%w (log in %s)", err, filepath.Join(nd, "clockwatch.log"))
	}
	return d, nil
}

// ready succeeds once the socket says hello with the state ok.
func (d *Daemon) ready(ctx context.Context) error {
	c, err := stepdown.Dial(ctx, d.Socket)
	if err != nil {
		return err
	}
	defer c.Close()
	c.SetReadDeadline(time.Now().Add(2 * time.Second))
	m, err := c.Read()
	if err != nil {
		return fmt.Errorf("reading the hello: %w", err)
	}
	if m.State != stepdown.StateOK {
		return fmt.Errorf("clockwatch state %s (%s)", m.State, m.Reason)
	}
	return nil
}

// Stop stops the daemon.
func (d *Daemon) Stop() {
	d.proc.Stop()
}

// Subscribe returns the Clockwatch a node of one run uses: a subscription
// with clockwatch's client library, ended with ctx.
func (d *Daemon) Subscribe(ctx context.Context) Clockwatch {
	sub := stepdown.Subscribe(ctx, stepdown.Options{Path: d.Socket, MinBackoff: 50 * time.Millisecond})
	return &socketClockwatch{d: d, sub: sub}
}

type socketClockwatch struct {
	d   *Daemon
	sub *stepdown.Subscription
}

func (s *socketClockwatch) Guard() leader.ClockGuard { return s.sub }

// Step runs `clockwatch drill --reason step --step S --hold H` and returns
// once the drill's stepdown has reached the drill command (and so every
// subscriber); the command runs on until the resume.
func (s *socketClockwatch) Step(ctx context.Context, step, hold time.Duration) error {
	cmd := exec.CommandContext(ctx, s.d.bin, "drill", "--socket", s.d.Socket, "--reason", "step",
		"--step="+step.String(), "--hold", hold.String(), "--json")
	out, err := cmd.StdoutPipe()
	if err != nil {
		return err
	}
	var stderr bytesBuffer
	cmd.Stderr = &stderr
	if err := cmd.Start(); err != nil {
		return fmt.Errorf("starting clockwatch drill: %w", err)
	}
	sc := bufio.NewScanner(out)
	first := sc.Scan()
	go func() {
		for sc.Scan() {
		}
		if err := cmd.Wait(); err != nil && ctx.Err() == nil {
			s.d.log.Warn("clockwatch drill", "node", s.d.Node, "err", err, "stderr", stderr.String())
		}
	}()
	if !first {
		return errors.New("clockwatch drill printed no stepdown: " + stderr.String())
	}
	return nil
}

// BuildClockwatch builds ./cmd/clockwatch of the main module (found by
// walking up from the working directory) into dir.
func BuildClockwatch(ctx context.Context, dir string) (string, error) {
	root, err := mainModuleRoot()
	if err != nil {
		return "", err
	}
	bin := filepath.Join(dir, "clockwatch")
	cmd := exec.CommandContext(ctx, "go", "build", "-o", bin, "./cmd/clockwatch")
	cmd.Dir = root
	// The main module builds with the repository's workspace (its Go
	// client is a module of its own), whatever this module was run with.
	cmd.Env = append(os.Environ(), "GOWORK="+filepath.Join(root, "go.work"))
	if out, err := cmd.CombinedOutput(); err != nil {
		return "", fmt.Errorf("building clockwatch in %s: %w\n%s", root, err, out)
	}
	return bin, nil
}

func mainModuleRoot() (string, error) {
	dir, err := os.Getwd()
	if err != nil {
		return "", err
	}
	for {
		b, err := os.ReadFile(filepath.Join(dir, "go.mod"))
		if err == nil && bytes.HasPrefix(b, []byte("module github.com/clockwatch/clockwatch\n")) {
			return dir, nil
		}
		parent := filepath.Dir(dir)
		if parent == dir {
			return "", errors.New("the clockwatch repository (go.mod of github.com/clockwatch/clockwatch) is not above the working directory")
		}
		dir = parent
	}
}
