// Command memflood measures a real clockwatch's memory with 5,000 stepdown
// subscribers and a scrape flood (issue 25, item 6). It starts the given
// binary on loopback with GOMEMLIMIT at the DaemonSet's memory limit (the Go
// runtime's soft limit: this host's memory controller is cgroup v1 and
// belongs to the machinery that runs the session, so no memory.max),
// connects the subscribers, scrapes /metrics from 8 loops for 10 s, runs a
// drill, and prints the daemon's RSS (VmRSS, and VmHWM, the peak) at each
// stage with the subscribers admitted and refused busy, its Go heap and
// stacks in use (from /metrics) at the start and once the subscribers are
// in, and how many received the drill's stepdown. It stops the daemon by
// PID.
//
//	go run ./scripts/memflood -bin /path/to/clockwatch
package main

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"log"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"time"

	"github.com/clockwatch/clockwatch/stepdown"
)

func main() {
	bin := flag.String("bin", "", "clockwatch binary")
	n := flag.Int("n", 5000, "subscribers")
	limit := flag.String("memlimit", "64MiB", "GOMEMLIMIT for the daemon (the DaemonSet's limits.memory)")
	port := flag.Int("port", 19862, "loopback HTTP port")
	maxClients := flag.Int("max-clients", 0, "stepdown.max_clients (0: the default)")
	flag.Parse()
	if err := run(*bin, *n, *limit, *port, *maxClients); err != nil {
		log.Fatal(err)
	}
}

func status(pid int) string {
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/status", pid))
	if err != nil {
		return err.Error()
	}
	var out []string
	for _, l := range strings.Split(string(b), "\n") {
		if strings.HasPrefix(l, "VmRSS") || strings.HasPrefix(l, "VmHWM") || strings.HasPrefix(l, "Threads") {
			out = append(out, strings.Join(strings.Fields(l), " "))
		}
	}
	return strings.Join(out, ", ")
}

// goMemory reads the daemon's Go heap and stacks in use, and its goroutines,
// from its /metrics (the Go collector's series).
func goMemory(addr string) string {
	resp, err := http.Get("http://" + addr + "/metrics")
	if err != nil {
		return err.Error()
	}
	defer resp.Body.Close()
	want := map[string]string{"go_memstats_heap_inuse_bytes": "heap in use", "go_memstats_stack_inuse_bytes": "stacks in use", "go_goroutines": "goroutines"}
	got := map[string]float64{}
	sc := bufio.NewScanner(resp.Body)
	sc.Buffer(nil, 1<<20)
	for sc.Scan() {
		name, v, ok := strings.Cut(sc.Text(), " ")
		if _, w := want[name]; ok && w {
			var f float64
			fmt.Sscan(v, &f)
			got[name] = f
		}
	}
	return fmt.Sprintf("heap in use %.1f MiB, stacks in use %.1f MiB, %.0f goroutines",
		got["go_memstats_heap_inuse_bytes"]/(1<<20), got["go_memstats_stack_inuse_bytes"]/(1<<20), got["go_goroutines"])
}

func run(bin string, n int, limit string, port, maxClients int) error {
	dir, err := os.MkdirTemp("", "memflood")
	if err != nil {
		return err
	}
	defer os.RemoveAll(dir)
	for _, d := range []string{"state", "run"} {
		if err := os.Mkdir(filepath.Join(dir, d), 0o700); err != nil {
			return err
		}
	}
	conf := filepath.Join(dir, "clockwatch.yml")
	if err := os.WriteFile(conf, []byte(`ptp:
  enabled: false
timesyncd:
  mode: "off"
stepdown:
  triggers:
    error_bound: {enabled: false}
    unsynchronized: {enabled: false}
`+maxClientsLine(maxClients)), 0o600); err != nil {
		return err
	}
	addr := fmt.Sprintf("127.0.0.1:%d", port)
	cmd := exec.Command(bin, "--config.file="+conf, "--web.listen-address="+addr, "--log.level=warn")
	cmd.Env = append(os.Environ(), "GOMEMLIMIT="+limit, "STATE_DIRECTORY="+filepath.Join(dir, "state"), "RUNTIME_DIRECTORY="+filepath.Join(dir, "run"))
	cmd.Stderr = os.Stderr
	if err := cmd.Start(); err != nil {
		return err
	}
	pid := cmd.Process.Pid
	defer func() { cmd.Process.Kill(); cmd.Wait() }()
	sock := filepath.Join(dir, "run", "stepdown.sock")
	for i := 0; ; i++ {
		if _, err := os.Stat(sock); err == nil {
			break
		}
		if i > 200 {
			return fmt.Errorf("no socket at %s", sock)
		}
		time.Sleep(50 * time.Millisecond)
	}
	time.Sleep(2 * time.Second)
	fmt.Printf("started (GOMEMLIMIT=%s): %s; %s\n", limit, status(pid), goMemory(addr))

	var hello, busy, other, stepdowns atomic.Int64
	var firstErr atomic.Value
	var first sync.WaitGroup
	var conns []net.Conn
	start := time.Now()
	for i := 0; i < n; i++ {
		c, err := net.Dial("unix", sock)
		for try := 0; errors.Is(err, syscall.EAGAIN) && try < 1000; try++ {
			time.Sleep(time.Millisecond) // the accept backlog is full
			c, err = net.Dial("unix", sock)
		}
		if err != nil {
			other.Add(1)
			firstErr.CompareAndSwap(nil, err.Error())
			continue
		}
		conns = append(conns, c)
		first.Add(1)
		go func() {
			sc := bufio.NewScanner(c)
			line := 0
			for sc.Scan() {
				var m struct{ Type, Code string }
				_ = json.Unmarshal(sc.Bytes(), &m)
				line++
				if line == 1 {
					switch {
					case m.Type == "hello":
						hello.Add(1)
					case m.Code == "busy":
						busy.Add(1)
					default:
						other.Add(1)
						firstErr.CompareAndSwap(nil, sc.Text())
					}
					first.Done()
				} else if m.Type == "stepdown" {
					stepdowns.Add(1)
				}
			}
			if line == 0 {
				other.Add(1)
				firstErr.CompareAndSwap(nil, fmt.Sprintf("closed before a first line: %v", sc.Err()))
				first.Done()
			}
		}()
	}
	first.Wait()
	fmt.Printf("%d subscribers in %v: %d hello, %d busy, %d other (%v): %s\n", n, time.Since(start).Round(time.Millisecond),
		hello.Load(), busy.Load(), other.Load(), firstErr.Load(), status(pid))
	// Settled: the runtime's figures once the admissions' garbage is gone.
	time.Sleep(3 * time.Second)
	fmt.Printf("settled: %s; %s\n", status(pid), goMemory(addr))

	var scrapes atomic.Int64
	var wg sync.WaitGroup
	deadline := time.Now().Add(10 * time.Second)
	for range 8 {
		wg.Go(func() {
			c := &http.Client{Timeout: 10 * time.Second}
			for time.Now().Before(deadline) {
				resp, err := c.Get("http://" + addr + "/metrics")
				if err != nil {
					continue
				}
				io.Copy(io.Discard, resp.Body)
				resp.Body.Close()
				scrapes.Add(1)
			}
		})
	}
	wg.Wait()
	fmt.Printf("after %d scrapes from 8 loops in 10 s: %s\n", scrapes.Load(), status(pid))

	// A drill: every admitted subscriber must get its stepdown. The flood
	// (root's, like the drill) took the reserve too: the first ten
	// subscribers (admitted) leave to make room for the drill.
	for _, c := range conns[:10] {
		c.Close()
	}
	conns = conns[10:]
	want := hello.Load() - 10
	time.Sleep(500 * time.Millisecond)
	ctx := context.Background()
	d, err := stepdown.Dial(ctx, sock)
	if err != nil {
		return fmt.Errorf("drill connection: %w", err)
	}
	defer d.Close()
	if h, err := d.Read(); err != nil || h.Type != stepdown.TypeHello {
		return fmt.Errorf("drill connection's hello: %v %v", h, err)
	}
	if err := d.Send(stepdown.Message{Type: stepdown.TypeDrill, Reason: "drill", HoldSeconds: 1}); err != nil {
		return err
	}
	t0 := time.Now()
	for stepdowns.Load() < want && time.Since(t0) < 30*time.Second {
		time.Sleep(10 * time.Millisecond)
	}
	fmt.Printf("drill: %d of %d admitted subscribers got the stepdown in %v: %s\n", stepdowns.Load(), want,
		time.Since(t0).Round(time.Millisecond), status(pid))
	if stepdowns.Load() != want {
		return fmt.Errorf("%d admitted subscribers, %d stepdowns", want, stepdowns.Load())
	}
	for _, c := range conns {
		c.Close()
	}
	return nil
}

func maxClientsLine(n int) string {
	if n == 0 {
		return ""
	}
	return fmt.Sprintf("  max_clients: %d\n", n)
}
