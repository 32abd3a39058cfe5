package floodtest

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math"
	"math/rand/v2"
	"os"
	"os/exec"
	"slices"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"time"

	"golang.org/x/sys/unix"

	"github.com/clockwatch/clockwatch/stepdown"
)

// Options say what to run.
type Options struct {
	// Bin is the clockwatch binary.
	Bin string
	// GOMAXPROCS is the daemon's --runtime.gomaxprocs; 0 leaves its
	// default.
	GOMAXPROCS int
	// Drills is how many drills each phase measures.
	Drills int
	// Phases run in order, each with its floods running (none: a
	// baseline).
	Phases []Phase
	// Progress gets a line per phase; nil discards them.
	Progress io.Writer
	// Nice is the nice value of the daemon and of this process (the good
	// subscriber and the drills) while Run runs: the unit's -10 unless
	// KeepNice; the floods run at 0.
	KeepNice bool
}

// UnitNice is clockwatch.service's Nice=.
const UnitNice = -10

// Phase is one measurement with some floods running.
type Phase struct {
	Name   string
	Floods []Flood
}

// Baseline is the name of the phases with no flood.
const Baseline = "baseline"

// DefaultPhases are the floods one at a time, then all together,
// between two baselines. Each other-user flood runs as a uid of its own
// (65534 is nobody), so that no per-uid cap stops it.
func DefaultPhases() []Phase {
	connect := Flood{Kind: KindConnect, UID: 65534, GID: 65534, N: 8}
	idle := []Flood{{Kind: KindIdle, UID: 65533, GID: 65534, N: 1000}, {Kind: KindIdle, UID: 65532, GID: 65534, N: 1000}}
	metrics := Flood{Kind: KindMetrics, UID: 65534, GID: 65534, N: 64}
	tlsf := Flood{Kind: KindTLS, UID: 65534, GID: 65534, N: 16}
	return []Phase{
		{Name: Baseline},
		{Name: "connect/close flood", Floods: []Flood{connect}},
		{Name: "2,000 never-reading subscribers", Floods: idle},
		{Name: "/metrics flood", Floods: []Flood{metrics}},
		{Name: "TLS-handshake flood", Floods: []Flood{tlsf}},
		{Name: "all at once", Floods: append(slices.Clone(idle), connect, metrics, tlsf)},
		{Name: Baseline},
	}
}

// Stats summarise durations.
type Stats struct {
	N                  int
	P50, P90, P99, Max time.Duration
}

func summarize(ds []time.Duration) Stats {
	if len(ds) == 0 {
		return Stats{}
	}
	s := slices.Clone(ds)
	slices.Sort(s)
	// Nearest rank: the p99 of 100 is the 99th, not the largest.
	q := func(f float64) time.Duration { return s[max(0, int(math.Ceil(f*float64(len(s))))-1)] }
	return Stats{N: len(s), P50: q(0.50), P90: q(0.90), P99: q(0.99), Max: s[len(s)-1]}
}

// FloodCount is what one flood process did.
type FloodCount struct {
	Flood
	Ops, Errs int64
	For       time.Duration
}

// Result is one phase's measurement.
type Result struct {
	Phase Phase
	// Delivery is from a drill's request (sent by a root client on a
	// connection of its own) to the good subscriber reading its stepdown.
	Delivery Stats
	// Event is from the stepdown's mono_ns (when the announcer made it)
	// to the good subscriber reading it.
	Event Stats
	// Hello is from a new root client's connect to its hello on the
	// socket root's tools dial (the reserved one; the public one with a
	// clockwatch that has none), and
	// PublicHello the same on the public socket, whose backlog every
	// local user shares; DialErrors counts connects that failed on each
	// (EAGAIN: the listen backlog was full).
	Hello, PublicHello           Stats
	DialErrors, PublicDialErrors int
	// Missed counts drills whose stepdown did not reach the good
	// subscriber within 10 s.
	Missed int
	// Load is the one-minute load average at the end of the phase.
	Load float64
	// DaemonCPU is the daemon's CPU time over the phase's wall time (1: a
	// whole core).
	DaemonCPU float64
	Floods    []FloodCount
}

// Run starts clockwatch, connects the good subscriber and a root client
// that asks for drills, and measures each phase. The daemon and every flood
// process are stopped by PID before it returns.
func Run(ctx context.Context, o Options) (res []Result, err error) {
	if !o.KeepNice {
		was := niceness()
		if err := renice(UnitNice); err != nil {
			return nil, err
		}
		defer renice(was)
	}
	dir, err := os.MkdirTemp("", "cwflood")
	if err != nil {
		return nil, err
	}
	defer os.RemoveAll(dir)
	if err := os.Chmod(dir, 0o755); err != nil {
		return nil, err
	}
	exe, err := copyExecutable(dir)
	if err != nil {
		return nil, fmt.Errorf("copying the flood executable: %w", err)
	}
	d, err := startDaemon(o.Bin, dir, o.GOMAXPROCS)
	if err != nil {
		return nil, err
	}
	defer func() {
		if serr := d.stop(); serr != nil && err == nil {
			err = serr
		}
	}()
	sub, err := connect(ctx, d)
	if err != nil {
		return nil, err
	}
	defer sub.Close()
	driller, err := connect(ctx, d)
	if err != nil {
		return nil, err
	}
	defer driller.Close()
	events := make(chan received, 64)
	go readEvents(sub, events)
	refusals := make(chan stepdown.Message, 16)
	go func() {
		for {
			m, err := driller.Read()
			if err != nil {
				close(refusals)
				return
			}
			if m.Type == stepdown.TypeError {
				refusals <- m
			}
		}
	}()
	for _, ph := range o.Phases {
		r, err := runPhase(ctx, o, d, exe, ph, driller, events, refusals)
		if err != nil {
			return res, fmt.Errorf("%s: %w", ph.Name, err)
		}
		res = append(res, r)
		if o.Progress != nil {
			fmt.Fprintf(o.Progress, "%s: drill → good subscriber p50 %s p99 %s max %s; root's hello max %s (%d connect errors), on the public socket max %s (%d); load %.2f\n",
				ph.Name, ms(r.Delivery.P50), ms(r.Delivery.P99), ms(r.Delivery.Max), ms(r.Hello.Max), r.DialErrors, ms(r.PublicHello.Max), r.PublicDialErrors, r.Load)
		}
	}
	return res, nil
}

// connect dials the daemon's socket until it answers with a hello in state
// ok (the daemon is starting), for up to 30 s.
func connect(ctx context.Context, d *daemon) (*stepdown.Conn, error) {
	deadline := time.Now().Add(30 * time.Second)
	for {
		c, err := stepdown.Dial(ctx, d.socket)
		if err == nil {
			c.SetReadDeadline(time.Now().Add(5 * time.Second))
			var h stepdown.Message
			if h, err = c.Read(); err == nil && h.State == stepdown.StateOK {
				c.SetReadDeadline(time.Time{})
				return c, nil
			}
			if err == nil {
				err = fmt.Errorf("state %s (%s)", h.State, h.Reason)
			}
			c.Close()
		}
		select {
		case <-d.done:
			return nil, fmt.Errorf("clockwatch exited; log:\n%s", d.logText())
		default:
		}
		if time.Now().After(deadline) {
			return nil, fmt.Errorf("no hello in state ok from %s within 30 s: %w; log:\n%s", d.socket, err, d.logText())
		}
		time.Sleep(100 * time.Millisecond)
	}
}

type received struct {
	m    stepdown.Message
	at   time.Time
	mono int64
}

// readEvents is the good subscriber: it reads every message as soon as it
// comes and passes on the events with when they were read.
func readEvents(c *stepdown.Conn, out chan<- received) {
	defer close(out)
	for {
		m, err := c.Read()
		if err != nil {
			return
		}
		at := time.Now()
		var ts unix.Timespec
		unix.ClockGettime(unix.CLOCK_MONOTONIC, &ts)
		if m.Type == stepdown.TypeStepdown || m.Type == stepdown.TypeResume {
			out <- received{m: m, at: at, mono: ts.Nano()}
		}
	}
}

func runPhase(ctx context.Context, o Options, d *daemon, exe string, ph Phase, driller *stepdown.Conn,
	events <-chan received, refusals <-chan stepdown.Message) (Result, error) {
	r := Result{Phase: ph}
	var floods []*floodProc
	stopAll := func() error {
		var errs []error
		for _, f := range floods {
			fc, err := f.stop()
			if err != nil {
				errs = append(errs, err)
			}
			r.Floods = append(r.Floods, fc)
		}
		floods = nil
		return errors.Join(errs...)
	}
	defer stopAll()
	for _, f := range ph.Floods {
		p, err := startFlood(exe, childSpec{Flood: f, Socket: d.socket, Addr: d.addr})
		if err != nil {
			return r, err
		}
		floods = append(floods, p)
	}
	if len(floods) > 0 {
		time.Sleep(time.Second) // the floods in full swing
	}
	cpu0, wall0 := cpuTime(d.cmd.Process.Pid), time.Now()
	var delivery, event, hello, publicHello []time.Duration
	probe := func(path string, hellos *[]time.Duration, errs *int) {
		began := time.Now()
		c, err := stepdown.Dial(ctx, path)
		if err != nil {
			*errs++
			return
		}
		defer c.Close()
		c.SetReadDeadline(time.Now().Add(10 * time.Second))
		if _, err := c.Read(); err == nil {
			*hellos = append(*hellos, time.Since(began))
		} else {
			*hellos = append(*hellos, 10*time.Second)
		}
	}
	for i := range o.Drills {
		if err := ctx.Err(); err != nil {
			return r, err
		}
		if i%2 == 0 {
			probe(reserved(d.socket), &hello, &r.DialErrors)
		} else {
			probe(d.socket, &publicHello, &r.PublicDialErrors)
		}
		del, ev, err := drill(driller, events, refusals)
		if err != nil {
			return r, err
		}
		if del < 0 {
			r.Missed++
		} else {
			delivery = append(delivery, del)
			event = append(event, ev)
		}
		// Events are seconds apart in life: the next drill comes after the
		// last one's resume has reached every subscriber (2,000 writes take
		// about 15 ms here), at a random phase of the heartbeat.
		time.Sleep(time.Duration(40+rand.IntN(40)) * time.Millisecond)
	}
	r.Delivery, r.Event, r.Hello, r.PublicHello = summarize(delivery), summarize(event), summarize(hello), summarize(publicHello)
	r.Load = loadAverage()
	r.DaemonCPU = float64(cpuTime(d.cmd.Process.Pid)-cpu0) / float64(time.Since(wall0))
	if err := stopAll(); err != nil {
		return r, err
	}
	select {
	case <-d.done:
		return r, fmt.Errorf("clockwatch exited; log:\n%s", d.logText())
	default:
	}
	time.Sleep(time.Second) // the daemon closes what the floods left
	return r, nil
}

// drill asks for a 20 ms drill and returns the time from the request to the
// good subscriber reading the stepdown and from the stepdown's mono_ns to
// that read (-1 when it did not come within 10 s); it waits for the resume.
func drill(driller *stepdown.Conn, events <-chan received, refusals <-chan stepdown.Message) (time.Duration, time.Duration, error) {
	for range 100 {
		for len(events) > 0 {
			<-events
		}
		began := time.Now()
		if err := driller.Send(stepdown.Message{Type: stepdown.TypeDrill, Reason: stepdown.ReasonDrill, HoldSeconds: 0.02}); err != nil {
			return 0, 0, err
		}
		timeout := time.After(10 * time.Second)
		var del, ev time.Duration = -1, -1
		for {
			select {
			case m, ok := <-refusals:
				if !ok {
					return 0, 0, errors.New("the drill connection was closed")
				}
				if m.Code != stepdown.CodeBusy {
					return 0, 0, fmt.Errorf("drill refused: %s", m.Error)
				}
				// The state is not ok yet (the last drill's resume is on
				// its way): ask again.
				time.Sleep(50 * time.Millisecond)
			case e, ok := <-events:
				if !ok {
					return 0, 0, errors.New("the good subscriber was disconnected")
				}
				if e.m.Type == stepdown.TypeStepdown && e.m.Drill && del < 0 {
					del, ev = e.at.Sub(began), time.Duration(e.mono-e.m.MonoNanos)
					continue
				}
				if e.m.Type == stepdown.TypeResume && del >= 0 {
					return del, ev, nil
				}
				continue
			case <-timeout:
				return del, ev, nil
			}
			break
		}
	}
	return 0, 0, errors.New("every drill was refused busy")
}

type floodProc struct {
	spec  childSpec
	cmd   *exec.Cmd
	stdin io.WriteCloser
	out   *bufio.Scanner
	began time.Time
	errb  lockedWriter
}

// startFlood runs exe as the flood process spec says (as its uid) and
// waits until it floods.
func startFlood(exe string, spec childSpec) (*floodProc, error) {
	js, err := json.Marshal(spec)
	if err != nil {
		return nil, err
	}
	p := &floodProc{spec: spec, cmd: exec.Command(exe)}
	p.cmd.Env = append(os.Environ(), childEnv+"="+string(js))
	p.cmd.SysProcAttr = &syscall.SysProcAttr{Pdeathsig: syscall.SIGKILL}
	if spec.UID != 0 {
		p.cmd.SysProcAttr.Credential = &syscall.Credential{Uid: spec.UID, Gid: spec.GID, Groups: []uint32{}}
	}
	p.errb = lockedWriter{mu: new(sync.Mutex), w: new(bytes.Buffer)}
	p.cmd.Stderr = &p.errb
	if p.stdin, err = p.cmd.StdinPipe(); err != nil {
		return nil, err
	}
	stdout, err := p.cmd.StdoutPipe()
	if err != nil {
		return nil, err
	}
	if err := p.cmd.Start(); err != nil {
		return nil, fmt.Errorf("starting the %s: %w", spec.Flood, err)
	}
	p.out = bufio.NewScanner(stdout)
	ready := make(chan bool, 1)
	go func() { ready <- p.out.Scan() && strings.HasPrefix(p.out.Text(), "ready") }()
	select {
	case ok := <-ready:
		if !ok {
			p.stdin.Close()
			p.cmd.Wait()
			return nil, fmt.Errorf("the %s did not start: %s", spec.Flood, p.errText())
		}
	case <-time.After(60 * time.Second):
		p.cmd.Process.Kill()
		p.cmd.Wait()
		return nil, fmt.Errorf("the %s was not flooding within 60 s", spec.Flood)
	}
	p.began = time.Now()
	return p, nil
}

func (p *floodProc) errText() string {
	p.errb.mu.Lock()
	defer p.errb.mu.Unlock()
	return p.errb.w.String()
}

// stop closes the flood's stdin, which ends it, and reads its counts.
func (p *floodProc) stop() (FloodCount, error) {
	fc := FloodCount{Flood: p.spec.Flood, For: time.Since(p.began)}
	p.stdin.Close()
	done := make(chan error, 1)
	go func() {
		if p.out.Scan() {
			f := strings.Fields(p.out.Text())
			if len(f) == 4 {
				fc.Ops, _ = strconv.ParseInt(f[1], 10, 64)
				fc.Errs, _ = strconv.ParseInt(f[3], 10, 64)
			}
		}
		done <- p.cmd.Wait()
	}()
	select {
	case err := <-done:
		if err != nil {
			return fc, fmt.Errorf("the %s: %v: %s", p.spec.Flood, err, p.errText())
		}
		return fc, nil
	case <-time.After(30 * time.Second):
		p.cmd.Process.Kill()
		<-done
		return fc, fmt.Errorf("the %s did not stop within 30 s; killed", p.spec.Flood)
	}
}

// cpuTime is the process's user and system time (/proc/PID/stat, in
// clock ticks of 10 ms).
func cpuTime(pid int) time.Duration {
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		return 0
	}
	// The command may hold spaces: the fields follow its closing ")".
	f := strings.Fields(string(b[bytes.LastIndexByte(b, ')')+1:]))
	if len(f) < 13 {
		return 0
	}
	u, _ := strconv.ParseInt(f[11], 10, 64)
	st, _ := strconv.ParseInt(f[12], 10, 64)
	return time.Duration(u+st) * 10 * time.Millisecond
}

func loadAverage() float64 {
	b, err := os.ReadFile("/proc/loadavg")
	if err != nil {
		return -1
	}
	f := strings.Fields(string(b))
	if len(f) == 0 {
		return -1
	}
	v, _ := strconv.ParseFloat(f[0], 64)
	return v
}

func ms(d time.Duration) string {
	return strconv.FormatFloat(float64(d.Microseconds())/1e3, 'f', 2, 64) + " ms"
}

// reserved is the reserved socket beside the public one at path
// (server.ReservedSocket), or path when there is none (an older
// clockwatch): root's tools dial it (server.Prefer). Not imported, so that
// the harness measures any build.
func reserved(path string) string {
	r := reservedName(path)
	if st, err := os.Stat(r); err == nil && st.Mode().Type() == os.ModeSocket {
		return r
	}
	return path
}

func reservedName(path string) string { return strings.TrimSuffix(path, ".sock") + "-reserved.sock" }
