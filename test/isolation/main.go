package main

import (
	"bufio"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/tls"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/pem"
	"errors"
	"flag"
	"fmt"
	"io"
	"math/big"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"runtime"
	"slices"
	"strings"
	"syscall"
	"time"

	"golang.org/x/sys/unix"

	"github.com/clockwatch/clockwatch/stepdown"
)

// floodUID is the first uid the floods run as.
const floodUID = 65534

func main() {
	var (
		bin     = flag.String("clockwatch", "", "the clockwatch binary to measure")
		drills  = flag.Int("drills", 200, "drills per phase")
		hold    = flag.Duration("hold", 20*time.Millisecond, "each drill's hold")
		nice    = flag.Int("nice", 0, "the daemon's nice value (the unit's is -10)")
		phases  = flag.String("phases", "baseline,connect,connect-elsewhere,silent,http,scrape,tls,all,baseline", "the phases, in order")
		obsNice = flag.Int("observer-nice", -10, "the nice value of the observing subscriber and of the control's second reader")
		dargs   = flag.String("daemon-args", "", "more flags for the daemon, separated by spaces")
		slow    = flag.Duration("slow", 0, "list each drill slower than this, split (0: none)")
		// A helper child's flags.
		helper = flag.String("helper", "", "run as a helper of this kind: observe, control-write, control-read (a child of this command)")
		// A flood child's flags.
		flood  = flag.String("flood", "", "run as a flood of this kind (a child of this command)")
		socket = flag.String("socket", "", "the stepdown socket (a flood child)")
		addr   = flag.String("addr", "", "the HTTPS address (a flood child)")
		nconns = flag.Int("conns", 0, "connections (a flood child)")
	)
	flag.Parse()
	if *helper != "" {
		if err := runHelper(*helper, *socket); err != nil {
			fmt.Fprintf(os.Stderr, "helper %s: %v\n", *helper, err)
			os.Exit(1)
		}
		return
	}
	if *flood != "" {
		if err := runFlood(*flood, *socket, *addr, *nconns); err != nil {
			fmt.Fprintf(os.Stderr, "flood %s: %v\n", *flood, err)
			os.Exit(1)
		}
		return
	}
	if *bin == "" {
		fmt.Fprintln(os.Stderr, "isolation: -clockwatch is required")
		os.Exit(2)
	}
	if err := run(*bin, *nice, *obsNice, *drills, *hold, strings.Split(*phases, ","), strings.Fields(*dargs), *slow); err != nil {
		fmt.Fprintf(os.Stderr, "isolation: %v\n", err)
		os.Exit(1)
	}
}

func run(bin string, nice, obsNice, drills int, hold time.Duration, phases []string, dargs []string, slow time.Duration) error {
	if os.Geteuid() != 0 {
		return errors.New("must run as root: the floods run as other uids")
	}
	dir, err := os.MkdirTemp("", "isolation-")
	if err != nil {
		return err
	}
	defer os.RemoveAll(dir)
	// The floods' uids must reach the socket and this binary.
	if err := os.Chmod(dir, 0o755); err != nil {
		return err
	}
	d, err := startDaemon(bin, nice, dir, dargs)
	if err != nil {
		return err
	}
	defer d.stop()
	self, err := os.Executable()
	if err != nil {
		return err
	}
	sub, err := subscribe(d.socket)
	if err != nil {
		return err
	}
	defer sub.conn.Close()
	h, err := startHelpers(self, d.socket, nice, obsNice)
	if err != nil {
		return err
	}
	defer h.stop()

	fmt.Printf("clockwatch %s at nice %d %s, %d drills of %s a phase; load at start: %s\n", bin, nice, strings.Join(dargs, " "), drills, hold, loadavg())
	fmt.Printf("%-9s | %-28s | %-28s | %-24s | %-24s | %s | %s\n", "phase", "drill→stepdown p50/p99/max", "resume made→read p50/p99/max",
		"root hello, public p50/max", "root hello, reserved p50/max", "subscribers", "×baseline p99 (drill, resume)")
	var base [2]summary
	var splits []split
	for i, ph := range phases {
		kids, err := startFloods(self, ph, d)
		if err != nil {
			return err
		}
		time.Sleep(2 * time.Second) // the floods reach their pace
		sub.subscribers = 0
		start := mono()
		m, err := sub.measure(drills, hold)
		end := mono()
		for _, k := range kids {
			k.stop()
		}
		if err != nil {
			return fmt.Errorf("phase %s: %w", ph, err)
		}
		ds, rs, hs, rhs := summarize(m.drill), summarize(m.resume), summarize(m.hello), summarize(m.rhello)
		if i == 0 {
			base = [2]summary{ds, rs}
		}
		fmt.Printf("%-9s | %-28s | %-28s | %-24s | %-24s | %11d | ×%.1f, ×%.1f\n", ph, ds, rs, hs.short(), rhs.short(), sub.subscribers, ds.p99/base[0].p99, rs.p99/base[1].p99)
		if err := d.alive(); err != nil {
			return err
		}
		time.Sleep(time.Second)
		sp := h.splitOf(start, end, m.sent, m.resumed)
		if slow > 0 {
			printSlow(ph, slow, m, h.observer.between(start, end+time.Second))
		}
		sp.input, sp.announce = m.input, m.announce
		splits = append(splits, sp)
	}
	fmt.Printf("load at end: %s\n", loadavg())
	printSplit(phases, obsNice, splits)
	return nil
}

// daemon is the clockwatch under measure.
type daemon struct {
	cmd          *exec.Cmd
	socket, addr string
	done         chan struct{}
	// elsewhere is a unix socket beside it that nobody accepts on, for
	// the connect-elsewhere phase (its backlog full, every connect then
	// fails at once, as at clockwatch's under the connect flood).
	elsewhere string
}

var listeningRE = regexp.MustCompile(`msg="Listening on" address=(\S+)`)

func startDaemon(bin string, nice int, dir string, dargs []string) (*daemon, error) {
	cert, key, err := writeCert(dir)
	if err != nil {
		return nil, err
	}
	webConf := filepath.Join(dir, "web.yml")
	conf := filepath.Join(dir, "clockwatch.yml")
	socket := filepath.Join(dir, "stepdown.sock")
	files := map[string]string{
		webConf: fmt.Sprintf("tls_server_config:\n  cert_file: %s\n  key_file: %s\n", cert, key),
		// No time source (the state stays ok, so drills run); the socket
		// open to every uid, as to an application in its group.
		conf: "chrony:\n  enabled: false\nptp:\n  enabled: false\ntimesyncd:\n  address: unix:path=" + filepath.Join(dir, "no-bus") + "\n" +
			"stepdown:\n  socket: " + socket + "\n  mode: \"0666\"\n  group: \"0\"\n" +
			"  triggers:\n    unsynchronized: {enabled: false}\n    error_bound: {enabled: false}\n",
	}
	for f, s := range files {
		if err := os.WriteFile(f, []byte(s), 0o644); err != nil {
			return nil, err
		}
	}
	state := filepath.Join(dir, "state")
	if err := os.Mkdir(state, 0o700); err != nil {
		return nil, err
	}
	// nice(1) sets the value before the daemon starts a thread: every
	// thread has it (it is per thread on Linux). --runtime.nice the same,
	// or the daemon, run as root here, would lower its own to -10.
	args := append([]string{"-n", fmt.Sprint(nice), bin, fmt.Sprintf("--runtime.nice=%d", nice),
		"--config.file=" + conf, "--web.config.file=" + webConf, "--web.listen-address=127.0.0.1:0"}, dargs...)
	cmd := exec.Command("nice", args...)
	cmd.Env = append(os.Environ(), "STATE_DIRECTORY="+state, "RUNTIME_DIRECTORY="+dir)
	cmd.SysProcAttr = &syscall.SysProcAttr{Pdeathsig: syscall.SIGKILL}
	stderr, err := cmd.StderrPipe()
	if err != nil {
		return nil, err
	}
	if err := cmd.Start(); err != nil {
		return nil, err
	}
	d := &daemon{cmd: cmd, socket: socket, done: make(chan struct{}), elsewhere: filepath.Join(dir, "elsewhere.sock")}
	// Never accepted on: closed when this process ends.
	if _, err := net.Listen("unix", d.elsewhere); err != nil {
		d.stop()
		return nil, err
	}
	if err := os.Chmod(d.elsewhere, 0o666); err != nil {
		d.stop()
		return nil, err
	}
	addrc := make(chan string, 1)
	go func() {
		sc := bufio.NewScanner(stderr)
		for sc.Scan() {
			if m := listeningRE.FindStringSubmatch(sc.Text()); m != nil {
				select {
				case addrc <- m[1]:
				default:
				}
			}
		}
		cmd.Wait()
		close(d.done)
	}()
	select {
	case d.addr = <-addrc:
	case <-d.done:
		return nil, errors.New("clockwatch exited at start")
	case <-time.After(20 * time.Second):
		d.stop()
		return nil, errors.New("clockwatch did not say where it listens within 20 s")
	}
	return d, nil
}

func (d *daemon) alive() error {
	select {
	case <-d.done:
		return errors.New("clockwatch exited")
	default:
		return nil
	}
}

func (d *daemon) stop() {
	d.cmd.Process.Signal(syscall.SIGTERM)
	select {
	case <-d.done:
	case <-time.After(10 * time.Second):
		d.cmd.Process.Kill()
		<-d.done
	}
}

// writeCert writes a self-signed ECDSA certificate for 127.0.0.1.
func writeCert(dir string) (certFile, keyFile string, err error) {
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		return "", "", err
	}
	tmpl := &x509.Certificate{SerialNumber: big.NewInt(1), Subject: pkix.Name{CommonName: "clockwatch isolation"},
		NotBefore: time.Now().Add(-time.Hour), NotAfter: time.Now().Add(24 * time.Hour),
		IPAddresses: []net.IP{net.IPv4(127, 0, 0, 1)}}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, tmpl, &key.PublicKey, key)
	if err != nil {
		return "", "", err
	}
	kder, err := x509.MarshalECPrivateKey(key)
	if err != nil {
		return "", "", err
	}
	certFile, keyFile = filepath.Join(dir, "cert.pem"), filepath.Join(dir, "key.pem")
	if err := os.WriteFile(certFile, pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: der}), 0o644); err != nil {
		return "", "", err
	}
	return certFile, keyFile, os.WriteFile(keyFile, pem.EncodeToMemory(&pem.Block{Type: "EC PRIVATE KEY", Bytes: kder}), 0o600)
}

// kid is one flood process.
type kid struct{ cmd *exec.Cmd }

func (k kid) stop() {
	k.cmd.Process.Kill()
	k.cmd.Wait()
}

// floodsOf are the child processes of each phase: kind, connections, and
// how many uids share them.
func floodsOf(phase string) []struct {
	kind        string
	conns, uids int
} {
	type f = struct {
		kind        string
		conns, uids int
	}
	all := map[string][]f{
		"connect": {{"connect", 1000, 1}},
		// The same flood at a socket that is not clockwatch's (elsewhere):
		// what its own system calls cost the machine.
		"connect-elsewhere": {{"connect", 1000, 1}},
		"silent":            {{"silent", 100, 20}},
		"http":              {{"http", 64, 1}},
		"scrape":            {{"scrape", 64, 1}},
		"tls":               {{"tls", 16, 1}},
	}
	if phase == "all" {
		var out []f
		for _, k := range []string{"connect", "silent", "http", "scrape", "tls"} {
			out = append(out, all[k]...)
		}
		return out
	}
	return all[phase]
}

func startFloods(self, phase string, d *daemon) ([]kid, error) {
	var kids []kid
	uid := floodUID
	target := d.socket
	if phase == "connect-elsewhere" {
		target = d.elsewhere
	}
	for _, f := range floodsOf(phase) {
		for range f.uids {
			cmd := exec.Command(self, "-flood="+f.kind, "-socket="+target, "-addr="+d.addr, fmt.Sprintf("-conns=%d", f.conns))
			cmd.Stderr = os.Stderr
			cmd.SysProcAttr = &syscall.SysProcAttr{Pdeathsig: syscall.SIGKILL,
				Credential: &syscall.Credential{Uid: uint32(uid), Gid: uint32(uid)}}
			if err := cmd.Start(); err != nil {
				for _, k := range kids {
					k.stop()
				}
				return nil, fmt.Errorf("starting the %s flood: %w", f.kind, err)
			}
			kids = append(kids, kid{cmd})
			uid--
		}
	}
	return kids, nil
}

// runFlood is a flood child: it runs until killed.
func runFlood(kind, socket, addr string, n int) error {
	switch kind {
	case "connect":
		// Idle connections up to what admission allows, then four loops
		// of connect and close.
		var held []net.Conn
		// Unreachable connections are closed by their finalizers.
		defer func() { runtime.KeepAlive(held) }()
		for range n {
			c, err := net.Dial("unix", socket)
			if err != nil {
				break
			}
			held = append(held, c)
		}
		for range 4 {
			go func() {
				for {
					if c, err := net.Dial("unix", socket); err == nil {
						c.Close()
					}
				}
			}()
		}
		select {}
	case "silent":
		var held []net.Conn
		defer func() { runtime.KeepAlive(held) }()
		for len(held) < n {
			c, err := net.Dial("unix", socket)
			if err != nil {
				time.Sleep(10 * time.Millisecond)
				continue
			}
			held = append(held, c)
		}
		select {}
	case "http", "scrape":
		path := "/healthz"
		if kind == "scrape" {
			path = "/metrics"
		}
		tr := &http.Transport{TLSClientConfig: &tls.Config{InsecureSkipVerify: true}, MaxIdleConnsPerHost: n}
		cl := &http.Client{Transport: tr, Timeout: 10 * time.Second}
		for range n {
			go func() {
				for {
					resp, err := cl.Get("https://" + addr + path)
					if err != nil {
						time.Sleep(10 * time.Millisecond)
						continue
					}
					io.Copy(io.Discard, resp.Body)
					resp.Body.Close()
				}
			}()
		}
		select {}
	case "tls":
		for range n {
			go func() {
				for {
					c, err := tls.Dial("tcp", addr, &tls.Config{InsecureSkipVerify: true})
					if err != nil {
						time.Sleep(10 * time.Millisecond)
						continue
					}
					c.Close()
				}
			}()
		}
		select {}
	}
	return fmt.Errorf("unknown flood %q", kind)
}

// subscriber is the root subscriber whose events are measured.
type subscriber struct {
	conn   *stepdown.Conn
	socket string
	// subscribers is the most a hello said were connected in the phase.
	subscribers int
}

func subscribe(socket string) (*subscriber, error) {
	// On the stepdown socket, as an application subscribes (root would
	// take the reserved one with stepdown.Dial): what happens to its
	// events after the hello does not depend on the socket it came by.
	nc, err := net.DialTimeout("unix", socket, 5*time.Second)
	if err != nil {
		return nil, err
	}
	c := stepdown.NewConn(nc)
	c.SetReadDeadline(time.Now().Add(5 * time.Second))
	m, err := c.Read()
	if err != nil {
		return nil, fmt.Errorf("reading the hello: %w", err)
	}
	// The daemon starts in "unknown" until its sources have reported.
	for m.State != stepdown.StateOK {
		if m, err = c.Read(); err != nil {
			return nil, fmt.Errorf("waiting for the state ok (last: %s): %w", m, err)
		}
	}
	return &subscriber{conn: c, socket: socket}, nil
}

// measured is one phase's figures of the drilling subscriber.
type measured struct {
	// drill is, for each drill, the time from its request to its
	// stepdown; resume, from its resume's mono_ns to the resume.
	drill, resume []time.Duration
	// hello and rhello are the times a new root client took from its
	// connect to its hello, on the stepdown socket and the reserved one.
	hello, rhello []time.Duration
	// input is, for each drill, the time from its request to its
	// stepdown's mono_ns (made by the daemon as it took the drill);
	// announce, from that mono_ns to reading the stepdown.
	input, announce []time.Duration
	seqs            []uint64 // each drill's stepdown's
	// sent is when each stepdown's drill was sent, by the stepdown's
	// seq; resumed, the seqs of the resumes in resume.
	sent    map[uint64]time.Duration
	resumed map[uint64]bool
}

// measure runs n drills and returns, for each, the time from the drill
// request to its stepdown, and from its resume's mono_ns to the resume;
// and after every tenth drill, the time a new root client takes from its
// connect to its hello (retrying a refused connect every millisecond), on
// the stepdown socket and on the reserved one.
func (s *subscriber) measure(n int, hold time.Duration) (measured, error) {
	r := measured{sent: map[uint64]time.Duration{}, resumed: map[uint64]bool{}}
	for len(r.drill) < n {
		if len(r.drill)%10 == 0 {
			d, err := s.connectTime(s.socket)
			if err != nil {
				return r, err
			}
			r.hello = append(r.hello, d)
			if d, err = s.connectTime(stepdown.ReservedPath(s.socket)); err != nil {
				return r, err
			}
			r.rhello = append(r.rhello, d)
		}
		sent := mono()
		if err := s.conn.Send(stepdown.Message{Type: stepdown.TypeDrill, HoldSeconds: hold.Seconds()}); err != nil {
			return r, err
		}
		gotStepdown := false
		for {
			s.conn.SetReadDeadline(time.Now().Add(10 * time.Second))
			m, err := s.conn.Read()
			at := mono()
			if err != nil {
				return r, fmt.Errorf("after %d drills: %w", len(r.drill), err)
			}
			switch m.Type {
			case stepdown.TypeError:
				if m.Code != stepdown.CodeBusy {
					return r, fmt.Errorf("drill refused: %s", m)
				}
				time.Sleep(20 * time.Millisecond)
			case stepdown.TypeStepdown:
				r.drill = append(r.drill, at-sent)
				r.seqs = append(r.seqs, m.Seq)
				r.input = append(r.input, time.Duration(m.MonoNanos)-sent)
				r.announce = append(r.announce, at-time.Duration(m.MonoNanos))
				r.sent[m.Seq] = sent
				gotStepdown = true
				continue
			case stepdown.TypeResume:
				if gotStepdown {
					r.resume = append(r.resume, at-time.Duration(m.MonoNanos))
					r.resumed[m.Seq] = true
				}
			default:
				continue
			}
			break
		}
	}
	return r, nil
}

// connectTime is the time from a new connection's first connect to path to
// its hello.
func (s *subscriber) connectTime(path string) (time.Duration, error) {
	start := mono()
	for {
		c, err := net.Dial("unix", path)
		if err != nil {
			if mono()-start > 10*time.Second {
				return 0, fmt.Errorf("a new root client could not connect for 10 s: %w", err)
			}
			time.Sleep(time.Millisecond)
			continue
		}
		c.SetReadDeadline(time.Now().Add(10 * time.Second))
		m, err := stepdown.NewConn(c).Read()
		c.Close()
		if err != nil {
			return 0, fmt.Errorf("a new root client's hello: %w", err)
		}
		if m.Type != stepdown.TypeHello {
			return 0, fmt.Errorf("a new root client got %s, not a hello", m)
		}
		s.subscribers = max(s.subscribers, m.Subscribers)
		return mono() - start, nil
	}
}

func mono() time.Duration {
	var ts unix.Timespec
	unix.ClockGettime(unix.CLOCK_MONOTONIC, &ts)
	return time.Duration(ts.Nano())
}

type summary struct{ p50, p99, max float64 } // milliseconds

func summarize(ds []time.Duration) summary {
	if len(ds) == 0 {
		return summary{}
	}
	s := slices.Clone(ds)
	slices.Sort(s)
	q := func(p float64) float64 { return float64(s[int(p*float64(len(s)-1))]) / 1e6 }
	return summary{q(0.5), q(0.99), float64(s[len(s)-1]) / 1e6}
}

func (s summary) String() string { return fmt.Sprintf("%.2f / %.2f / %.1f ms", s.p50, s.p99, s.max) }

// short is p50 and max.
func (s summary) short() string { return fmt.Sprintf("%.2f / %.1f ms", s.p50, s.max) }

func loadavg() string {
	b, err := os.ReadFile("/proc/loadavg")
	if err != nil {
		return "?"
	}
	f := strings.Fields(string(b))
	return strings.Join(f[:3], " ")
}
