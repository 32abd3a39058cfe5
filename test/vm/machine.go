package vm

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"
)

// Machine is a qemu process started by Boot or Incoming, driven through its
// QMP socket while it runs: what a migration or a snapshot restore needs,
// where Run only boots and waits. The guest's state can move from one
// Machine to another (Migrate, SaveTo); its console is each process's own.
type Machine struct {
	t    testing.TB
	vm   *prepared
	name string
	dir  string
	cmd  *exec.Cmd
	qmp  *qmpConn

	console *console
	done    chan struct{}
	runErr  error
	started time.Time
	elapsed time.Duration
	timer   *time.Timer
	killed  bool
}

// Line is one line of a guest console with the host's time when it arrived.
type Line struct {
	Text string
	// At is the host's time (wall and monotonic) when qemu wrote the line.
	At time.Time
}

// Event is an asynchronous QMP event, stamped by qemu itself (host wall
// time, microseconds).
type Event struct {
	Name string
	At   time.Time
	Data json.RawMessage
}

// Boot starts a VM running opts.Script, like Run, and returns while it runs.
// The test drives it through the Machine; its Timeout still bounds the run.
func Boot(t testing.TB, opts Options) (*Machine, error) {
	t.Helper()
	vm, err := prepare(t, opts)
	if err != nil {
		return nil, err
	}
	return start(t, vm, "boot")
}

// Incoming starts a second qemu with m's configuration (kernel, initramfs,
// memory, devices) waiting for a guest's state from uri, as qemu's
// -incoming takes it ("tcp:127.0.0.1:PORT", "file:PATH", "defer"). It
// resumes the guest itself once the state is in, unless the state was saved
// from a stopped guest (then Cont does).
func (m *Machine) Incoming(name, uri string) (*Machine, error) {
	m.t.Helper()
	return start(m.t, m.vm, name, "-incoming", uri)
}

func start(t testing.TB, vm *prepared, name string, extra ...string) (*Machine, error) {
	t.Helper()
	// A short directory: a unix socket's path must fit in 108 bytes, which
	// t.TempDir's may not.
	dir, err := os.MkdirTemp("", "cwvm-")
	if err != nil {
		return nil, err
	}
	t.Cleanup(func() { os.RemoveAll(dir) })
	sock := filepath.Join(dir, "qmp.sock")
	m := &Machine{t: t, vm: vm, name: name, dir: dir, done: make(chan struct{}), console: newConsole(name, vm.opts.Console)}
	m.cmd = exec.Command(vm.qemu, vm.args(sock, extra...)...)
	// Pdeathsig kills qemu if the test binary dies first; Kill and the
	// timeout kill this process and nothing else.
	m.cmd.SysProcAttr = &syscall.SysProcAttr{Pdeathsig: syscall.SIGKILL}
	m.cmd.Stdout = m.console
	m.cmd.Stderr = m.console
	m.started = time.Now()
	if err := m.cmd.Start(); err != nil {
		return nil, fmt.Errorf("starting qemu (%s): %w", name, err)
	}
	m.timer = time.AfterFunc(vm.opts.Timeout, func() { m.killed = true; m.cmd.Process.Kill() })
	go func() {
		m.runErr = m.cmd.Wait()
		m.elapsed = time.Since(m.started)
		m.timer.Stop()
		m.console.close()
		close(m.done)
	}()
	t.Cleanup(m.Kill)
	if m.qmp, err = dialQMP(sock, m.done); err != nil {
		m.Kill()
		return nil, fmt.Errorf("qemu (%s): %w%s", name, err, tail(m.console.String()))
	}
	return m, nil
}

// Name is the name given at start ("boot" for Boot's).
func (m *Machine) Name() string { return m.name }

// Dir is a short directory that lives as long as the test (for snapshot
// files and sockets).
func (m *Machine) Dir() string { return m.dir }

// Kill ends the qemu process if it still runs.
func (m *Machine) Kill() {
	select {
	case <-m.done:
	default:
		m.cmd.Process.Kill()
		<-m.done
	}
}

// Wait waits for qemu to exit (the guest powered off, or Quit) and returns
// the console as Run does. A machine whose guest moved on to another returns
// no error for the script's missing exit line when moved is true.
func (m *Machine) Wait(moved bool) (*Result, error) {
	<-m.done
	res := &Result{ExitCode: -1, Elapsed: m.elapsed}
	err := finish(res, m.console.String(), m.runErr, m.killed, m.vm.opts.Timeout)
	if moved && !m.killed && m.runErr == nil && res.ExitCode < 0 {
		err = nil
	}
	return res, err
}

// WaitLine waits until a console line matches re and returns it, or fails
// after timeout or when qemu exits first.
func (m *Machine) WaitLine(re *regexp.Regexp, timeout time.Duration) (Line, error) {
	return m.console.wait(re, timeout)
}

// Lines returns the console lines so far.
func (m *Machine) Lines() []Line { return m.console.snapshot() }

// Events returns the QMP events qemu sent so far.
func (m *Machine) Events() []Event { return m.qmp.eventList() }

// WaitEvent waits for the QMP event name (e.g. "RESUME") and returns it.
func (m *Machine) WaitEvent(name string, timeout time.Duration) (Event, error) {
	deadline := time.Now().Add(timeout)
	for {
		for _, e := range m.qmp.eventList() {
			if e.Name == name {
				return e, nil
			}
		}
		select {
		case <-m.done:
			return Event{}, fmt.Errorf("qemu (%s) exited before the %s event%s", m.name, name, tail(m.console.String()))
		case <-time.After(5 * time.Millisecond):
		}
		if time.Now().After(deadline) {
			return Event{}, fmt.Errorf("qemu (%s): no %s event within %v", m.name, name, timeout)
		}
	}
}

// Execute runs a QMP command and returns its "return" value.
func (m *Machine) Execute(command string, args any) (json.RawMessage, error) {
	return m.qmp.execute(command, args)
}

// Migrate sends the running guest to uri (another Machine's Incoming) and
// waits until qemu says the migration completed: the guest then runs on
// the destination, and this qemu is paused (Quit it).
func (m *Machine) Migrate(uri string, timeout time.Duration) error {
	if _, err := m.Execute("migrate", map[string]any{"uri": uri}); err != nil {
		return fmt.Errorf("migrate to %s: %w", uri, err)
	}
	deadline := time.Now().Add(timeout)
	for {
		b, err := m.Execute("query-migrate", nil)
		if err != nil {
			return err
		}
		var st struct {
			Status      string `json:"status"`
			ErrorDesc   string `json:"error-desc"`
			TotalTimeMS int64  `json:"total-time"`
		}
		if err := json.Unmarshal(b, &st); err != nil {
			return fmt.Errorf("query-migrate answered %s: %w", b, err)
		}
		switch st.Status {
		case "completed":
			return nil
		case "failed", "cancelled":
			return fmt.Errorf("migration to %s %s: %s", uri, st.Status, st.ErrorDesc)
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("migration to %s still %s after %v", uri, st.Status, timeout)
		}
		time.Sleep(5 * time.Millisecond)
	}
}

// SaveTo stops the guest and saves its whole state into file (qemu's
// "file:" migration): a snapshot that Incoming("file:"+file) restores. This
// qemu stays paused (Quit it).
func (m *Machine) SaveTo(file string, timeout time.Duration) error {
	if _, err := m.Execute("stop", nil); err != nil {
		return err
	}
	return m.Migrate("file:"+file, timeout)
}

// Cont resumes a paused guest.
func (m *Machine) Cont() error {
	_, err := m.Execute("cont", nil)
	return err
}

// Quit ends qemu (its guest moved elsewhere) and waits for it.
func (m *Machine) Quit() error {
	if _, err := m.Execute("quit", nil); err != nil && !errors.Is(err, errQMPClosed) {
		return err
	}
	select {
	case <-m.done:
		return nil
	case <-time.After(10 * time.Second):
		m.Kill()
		return fmt.Errorf("qemu (%s) did not quit within 10 s: killed", m.name)
	}
}

// console collects a qemu's output as lines stamped with their arrival.
type console struct {
	name string
	copy io.Writer

	mu      sync.Mutex
	cond    *sync.Cond
	raw     bytes.Buffer
	partial []byte
	lines   []Line
	closed  bool
}

func newConsole(name string, copyTo io.Writer) *console {
	c := &console{name: name, copy: copyTo}
	if os.Getenv(ConsoleEnv) == "1" {
		c.copy = io.MultiWriter(prefixed(name, os.Stderr), nonNil(copyTo))
	}
	c.cond = sync.NewCond(&c.mu)
	return c
}

func nonNil(w io.Writer) io.Writer {
	if w == nil {
		return io.Discard
	}
	return w
}

// prefixed writes each chunk to w behind the machine's name (debugging only).
func prefixed(name string, w io.Writer) io.Writer {
	return writerFunc(func(b []byte) (int, error) {
		fmt.Fprintf(w, "[%s] %s", name, b)
		return len(b), nil
	})
}

type writerFunc func([]byte) (int, error)

func (f writerFunc) Write(b []byte) (int, error) { return f(b) }

func (c *console) Write(b []byte) (int, error) {
	now := time.Now()
	c.mu.Lock()
	c.raw.Write(b)
	c.partial = append(c.partial, b...)
	for {
		i := bytes.IndexByte(c.partial, '\n')
		if i < 0 {
			break
		}
		c.lines = append(c.lines, Line{Text: strings.TrimRight(string(c.partial[:i]), "\r"), At: now})
		c.partial = c.partial[i+1:]
	}
	c.cond.Broadcast()
	c.mu.Unlock()
	if c.copy != nil {
		c.copy.Write(b)
	}
	return len(b), nil
}

func (c *console) close() {
	c.mu.Lock()
	c.closed = true
	c.cond.Broadcast()
	c.mu.Unlock()
}

func (c *console) String() string {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.raw.String()
}

func (c *console) snapshot() []Line {
	c.mu.Lock()
	defer c.mu.Unlock()
	return append([]Line(nil), c.lines...)
}

func (c *console) wait(re *regexp.Regexp, timeout time.Duration) (Line, error) {
	deadline := time.Now().Add(timeout)
	wake := time.AfterFunc(timeout, func() { c.mu.Lock(); c.cond.Broadcast(); c.mu.Unlock() })
	defer wake.Stop()
	c.mu.Lock()
	defer c.mu.Unlock()
	for seen := 0; ; {
		for ; seen < len(c.lines); seen++ {
			if re.MatchString(c.lines[seen].Text) {
				return c.lines[seen], nil
			}
		}
		if c.closed {
			return Line{}, fmt.Errorf("qemu (%s) exited before a console line matched %s%s", c.name, re, tail(c.raw.String()))
		}
		if time.Now().After(deadline) {
			return Line{}, fmt.Errorf("qemu (%s): no console line matched %s within %v%s", c.name, re, timeout, tail(c.raw.String()))
		}
		c.cond.Wait()
	}
}

// qmpConn is a QMP client: one command at a time, events collected.
type qmpConn struct {
	conn net.Conn
	cmd  sync.Mutex

	mu      sync.Mutex
	events  []Event
	replies chan qmpReply
	err     error
}

type qmpReply struct {
	Return json.RawMessage `json:"return"`
	Error  *struct {
		Class string `json:"class"`
		Desc  string `json:"desc"`
	} `json:"error"`
}

var errQMPClosed = errors.New("QMP connection closed")

func dialQMP(sock string, exited <-chan struct{}) (*qmpConn, error) {
	var conn net.Conn
	var err error
	for deadline := time.Now().Add(30 * time.Second); ; time.Sleep(5 * time.Millisecond) {
		if conn, err = net.Dial("unix", sock); err == nil {
			break
		}
		select {
		case <-exited:
			return nil, fmt.Errorf("qemu exited before its QMP socket answered")
		default:
		}
		if time.Now().After(deadline) {
			return nil, fmt.Errorf("connecting to QMP at %s: %w", sock, err)
		}
	}
	q := &qmpConn{conn: conn, replies: make(chan qmpReply, 1)}
	dec := json.NewDecoder(bufio.NewReader(conn))
	var greeting map[string]json.RawMessage
	if err := dec.Decode(&greeting); err != nil || greeting["QMP"] == nil {
		conn.Close()
		return nil, fmt.Errorf("reading QMP's greeting: %v", err)
	}
	go q.read(dec)
	if _, err := q.execute("qmp_capabilities", nil); err != nil {
		conn.Close()
		return nil, err
	}
	return q, nil
}

func (q *qmpConn) read(dec *json.Decoder) {
	defer close(q.replies)
	for {
		var msg struct {
			Event     string          `json:"event"`
			Data      json.RawMessage `json:"data"`
			Timestamp struct {
				Seconds      int64 `json:"seconds"`
				Microseconds int64 `json:"microseconds"`
			} `json:"timestamp"`
			qmpReply
		}
		if err := dec.Decode(&msg); err != nil {
			return
		}
		if msg.Event != "" {
			q.mu.Lock()
			q.events = append(q.events, Event{Name: msg.Event, Data: msg.Data,
				At: time.Unix(msg.Timestamp.Seconds, msg.Timestamp.Microseconds*1000)})
			q.mu.Unlock()
			continue
		}
		q.replies <- msg.qmpReply
	}
}

func (q *qmpConn) eventList() []Event {
	q.mu.Lock()
	defer q.mu.Unlock()
	return append([]Event(nil), q.events...)
}

func (q *qmpConn) execute(command string, args any) (json.RawMessage, error) {
	q.cmd.Lock()
	defer q.cmd.Unlock()
	req := map[string]any{"execute": command}
	if args != nil {
		req["arguments"] = args
	}
	b, _ := json.Marshal(req)
	if _, err := q.conn.Write(append(b, '\n')); err != nil {
		return nil, fmt.Errorf("QMP %s: %w", command, err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	select {
	case r, ok := <-q.replies:
		if !ok {
			return nil, fmt.Errorf("QMP %s: %w", command, errQMPClosed)
		}
		if r.Error != nil {
			return nil, fmt.Errorf("QMP %s: %s: %s", command, r.Error.Class, r.Error.Desc)
		}
		return r.Return, nil
	case <-ctx.Done():
		return nil, fmt.Errorf("QMP %s: no answer within 30 s", command)
	}
}
