package replay

import (
	"context"
	"errors"
	"fmt"
	"net"
	"os"
	"os/exec"
	"os/user"
	"path/filepath"
	"slices"
	"strconv"
	"syscall"
	"time"
)

// Tools are the outside programs the experiment runs.
type Tools struct {
	RedisServer   string
	RedisSentinel string
	Initdb        string
	Postgres      string
}

// FindTools looks for Redis (Debian's redis-server and redis-sentinel) and
// PostgreSQL's server binaries (Debian's postgresql, under
// /usr/lib/postgresql/N/bin).
func FindTools() (Tools, error) {
	var t Tools
	var errs []error
	if p, err := exec.LookPath("redis-server"); err == nil {
		t.RedisServer = p
	} else {
		errs = append(errs, errors.New("redis-server not found (Debian package redis-server)"))
	}
	if p, err := exec.LookPath("redis-sentinel"); err == nil {
		t.RedisSentinel = p
	} else {
		errs = append(errs, errors.New("redis-sentinel not found (Debian package redis-sentinel)"))
	}
	dirs, _ := filepath.Glob("/usr/lib/postgresql/*/bin")
	slices.SortFunc(dirs, func(a, b string) int { return pgVersion(b) - pgVersion(a) })
	for _, d := range dirs {
		if fileExists(filepath.Join(d, "initdb")) && fileExists(filepath.Join(d, "postgres")) {
			t.Initdb, t.Postgres = filepath.Join(d, "initdb"), filepath.Join(d, "postgres")
			break
		}
	}
	if t.Postgres == "" {
		errs = append(errs, errors.New("PostgreSQL server not found under /usr/lib/postgresql/*/bin (Debian package postgresql)"))
	}
	return t, errors.Join(errs...)
}

func pgVersion(binDir string) int {
	n, _ := strconv.Atoi(filepath.Base(filepath.Dir(binDir)))
	return n
}

func fileExists(p string) bool {
	st, err := os.Stat(p)
	return err == nil && !st.IsDir()
}

// FreePort returns a loopback TCP port nobody listens on right now.
func FreePort() (int, error) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return 0, fmt.Errorf("finding a free port: %w", err)
	}
	defer ln.Close()
	return ln.Addr().(*net.TCPAddr).Port, nil
}

// Proc is an outside process the experiment started.
type Proc struct {
	cmd  *exec.Cmd
	done chan struct{}
	err  error
}

// start runs cmd with its output in logPath and the death signal set, so it
// does not outlive the experiment.
func start(cmd *exec.Cmd, logPath string) (*Proc, error) {
	f, err := os.Create(logPath)
	if err != nil {
		return nil, fmt.Errorf("creating %s: %w", logPath, err)
	}
	defer f.Close()
	cmd.Stdout, cmd.Stderr = f, f
	if cmd.SysProcAttr == nil {
		cmd.SysProcAttr = &syscall.SysProcAttr{}
	}
	cmd.SysProcAttr.Pdeathsig = syscall.SIGKILL
	if err := cmd.Start(); err != nil {
		return nil, fmt.Errorf("starting %s: %w", cmd.Path, err)
	}
	p := &Proc{cmd: cmd, done: make(chan struct{})}
	go func() { p.err = cmd.Wait(); close(p.done) }()
	return p, nil
}

// Stop sends SIGTERM to this process only (by its PID) and waits, then
// SIGKILL after grace.
func (p *Proc) Stop(grace time.Duration) {
	if p == nil {
		return
	}
	_ = p.cmd.Process.Signal(syscall.SIGTERM)
	select {
	case <-p.done:
	case <-time.After(grace):
		_ = p.cmd.Process.Kill()
		<-p.done
	}
}

// Kill sends SIGKILL to this process only and waits.
func (p *Proc) Kill() {
	if p == nil {
		return
	}
	_ = p.cmd.Process.Kill()
	<-p.done
}

// Exited reports whether the process has ended.
func (p *Proc) Exited() bool {
	select {
	case <-p.done:
		return true
	default:
		return false
	}
}

// poll calls f every 20 ms until it succeeds, the process dies or the
// timeout passes.
func poll(ctx context.Context, p *Proc, timeout time.Duration, what string, f func(context.Context) error) error {
	ctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	for {
		err := f(ctx)
		if err == nil {
			return nil
		}
		if p != nil && p.Exited() {
			return fmt.Errorf("%s exited (%v) before it was ready: %w", what, p.err, err)
		}
		select {
		case <-ctx.Done():
			return fmt.Errorf("%s not ready after %s: %w", what, timeout, err)
		case <-time.After(20 * time.Millisecond):
		}
	}
}

// Postgres is a PostgreSQL cluster in a temporary directory, on loopback.
type Postgres struct {
	DSN  string
	dir  string
	proc *Proc
}

// StartPostgres creates a cluster with initdb and starts it. PostgreSQL
// refuses to run as root, so as root the cluster belongs to the postgres
// user and its directory is made outside logDir (which a test makes 0700
// for root); Stop removes it.
func StartPostgres(ctx context.Context, tools Tools, logDir string) (*Postgres, error) {
	var cred *syscall.Credential
	if os.Geteuid() == 0 {
		u, err := user.Lookup("postgres")
		if err != nil {
			return nil, fmt.Errorf("running PostgreSQL as root needs the postgres user: %w", err)
		}
		uid, _ := strconv.Atoi(u.Uid)
		gid, _ := strconv.Atoi(u.Gid)
		cred = &syscall.Credential{Uid: uint32(uid), Gid: uint32(gid)}
	}
	dir, err := os.MkdirTemp("", "redislock-pg-")
	if err != nil {
		return nil, fmt.Errorf("postgres directory: %w", err)
	}
	if cred != nil {
		if err := os.Chown(dir, int(cred.Uid), int(cred.Gid)); err != nil {
			os.RemoveAll(dir)
			return nil, fmt.Errorf("postgres directory: %w", err)
		}
	}
	data := filepath.Join(dir, "data")
	initdb := exec.CommandContext(ctx, tools.Initdb, "-D", data, "-U", "postgres", "-A", "trust",
		"--no-sync", "-E", "UTF8", "--locale", "C")
	initdb.SysProcAttr = &syscall.SysProcAttr{Credential: cred, Pdeathsig: syscall.SIGKILL}
	if out, err := initdb.CombinedOutput(); err != nil {
		os.RemoveAll(dir)
		return nil, fmt.Errorf("initdb: %w\n%s", err, out)
	}
	port, err := FreePort()
	if err != nil {
		os.RemoveAll(dir)
		return nil, err
	}
	cmd := exec.Command(tools.Postgres, "-D", data, "-k", dir, "-p", strconv.Itoa(port),
		"-h", "127.0.0.1", "-F", "-c", "synchronous_commit=off", "-c", "full_page_writes=off")
	cmd.SysProcAttr = &syscall.SysProcAttr{Credential: cred}
	logPath := filepath.Join(logDir, "postgres.log")
	p, err := start(cmd, logPath)
	if err != nil {
		os.RemoveAll(dir)
		return nil, err
	}
	pg := &Postgres{DSN: fmt.Sprintf("postgres://postgres@127.0.0.1:%d/postgres?sslmode=disable", port), dir: dir, proc: p}
	err = poll(ctx, p, 30*time.Second, "postgres", func(ctx context.Context) error {
		db, err := openDB(pg.DSN)
		if err != nil {
			return err
		}
		defer db.Close()
		return db.PingContext(ctx)
	})
	if err != nil {
		pg.Stop()
		return nil, fmt.Errorf("%w (log in %s)", err, logPath)
	}
	return pg, nil
}

// Stop stops PostgreSQL (SIGINT: fast shutdown, then kill) and removes its
// directory.
func (pg *Postgres) Stop() {
	if pg.proc != nil {
		_ = pg.proc.cmd.Process.Signal(syscall.SIGINT) // fast shutdown
		pg.proc.Stop(10 * time.Second)
	}
	os.RemoveAll(pg.dir)
}
