package socket_test

import (
	"bufio"
	"errors"
	"fmt"
	"io"
	"net"
	"os"
	"os/exec"
	"slices"
	"strconv"
	"strings"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/clockwatch/clockwatch/internal/announce"
	"github.com/clockwatch/clockwatch/internal/policy"
	"github.com/clockwatch/clockwatch/internal/transport/socket"
)

// raiseFDLimit lifts RLIMIT_NOFILE's soft limit to the hard one, and the hard
// one to need when permitted (root), and returns the soft limit.
func raiseFDLimit(need uint64) uint64 {
	var rl syscall.Rlimit
	if err := syscall.Getrlimit(syscall.RLIMIT_NOFILE, &rl); err != nil {
		return 0
	}
	if rl.Max < need {
		want := syscall.Rlimit{Cur: need, Max: need}
		if syscall.Setrlimit(syscall.RLIMIT_NOFILE, &want) == nil {
			return need
		}
	}
	rl.Cur = rl.Max
	syscall.Setrlimit(syscall.RLIMIT_NOFILE, &rl)
	syscall.Getrlimit(syscall.RLIMIT_NOFILE, &rl)
	return rl.Cur
}

// BenchmarkFanout measures the time from an event entering the server to its
// arrival at the last of n subscribers, over real unix sockets. Each
// iteration is one event; p50 and p99 are reported across iterations (run
// with -benchtime=200x or more for a meaningful p99).
func BenchmarkFanout(b *testing.B) {
	for _, n := range []int{1, 100, 1000, 10000} {
		b.Run(fmt.Sprintf("subscribers=%d", n), func(b *testing.B) { benchFanout(b, n) })
	}
}

func benchFanout(b *testing.B, n int) {
	// The subscribers live in a child process (this test binary again), as
	// applications would, and so that each process needs only n sockets.
	if lim := raiseFDLimit(uint64(n + 1024)); lim < uint64(n+256) {
		b.Skipf("RLIMIT_NOFILE %d is too low for %d subscribers", lim, n)
	}
	cfg := testConfig(b)
	cfg.Heartbeat = time.Hour
	cfg.MaxClients = n + 10
	_, ann := start(b, cfg, socket.Options{})

	child, br := startSubscribers(b, cfg.Socket, n)
	cpu0, childCPU0 := cpuTime(), procCPUTime(child.Process.Pid)
	lat := stepLatencies(b, ann, br, 0)
	cpu, childCPU := cpuTime()-cpu0, procCPUTime(child.Process.Pid)-childCPU0
	q := quantileMS(lat)
	b.ReportMetric(q(0.50), "p50-ms")
	b.ReportMetric(q(0.99), "p99-ms")
	// The server's CPU time per event (this process: the subscribers are in
	// the child), which does not depend on what else runs on the machine.
	b.ReportMetric(float64(cpu.Microseconds())/float64(len(lat)), "server-cpu-µs/event")
	// The subscribers' CPU time per event (the child process, in clock
	// ticks: meaningful over many events). Both share the same cores, so
	// the sum over the number of cores bounds the end-to-end latency.
	if childCPU >= 0 {
		b.ReportMetric(float64(childCPU.Microseconds())/float64(len(lat)), "subscribers-cpu-µs/event")
	}
	b.ReportMetric(0, "ns/op")
}

// stepLatencies announces a step each iteration of b's loop, pause apart,
// and returns, sorted, the times until the subscriber process (br) said all
// its subscribers had it.
func stepLatencies(b *testing.B, ann *announce.Announcer, br *bufio.Reader, pause time.Duration) []time.Duration {
	b.Helper()
	lat := make([]time.Duration, 0, b.N)
	i := 0
	for b.Loop() {
		i++
		t0 := time.Now()
		ann.Step(policy.Step{Seconds: float64(i)})
		if _, err := br.ReadByte(); err != nil {
			b.Fatalf("subscriber process: %v", err)
		}
		lat = append(lat, time.Since(t0))
		time.Sleep(pause)
	}
	b.StopTimer()
	slices.Sort(lat)
	return lat
}

// quantileMS returns sorted lat's quantile function, in milliseconds.
func quantileMS(lat []time.Duration) func(p float64) float64 {
	return func(p float64) float64 { return lat[min(len(lat)-1, int(p*float64(len(lat))))].Seconds() * 1e3 }
}

// startChild runs this test binary again with only the test named and env
// added (a child process, as applications are), and returns it with its
// output and its input; it is killed when the benchmark ends.
func startChild(b *testing.B, test string, env ...string) (*exec.Cmd, *bufio.Reader, io.WriteCloser) {
	b.Helper()
	child := exec.Command(os.Args[0], "-test.run=^"+test+"$")
	child.Env = append(os.Environ(), env...)
	child.Stderr = os.Stderr
	out, err := child.StdoutPipe()
	if err != nil {
		b.Fatal(err)
	}
	in, err := child.StdinPipe()
	if err != nil {
		b.Fatal(err)
	}
	if err := child.Start(); err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { child.Process.Kill(); child.Wait() })
	return child, bufio.NewReader(out), in
}

// startSubscribers starts n subscribers of path in a child process
// (TestFanoutSubscribers) and waits until each has its hello: the child
// writes a byte each time all n have received an event.
func startSubscribers(b *testing.B, path string, n int) (*exec.Cmd, *bufio.Reader) {
	b.Helper()
	child, br, _ := startChild(b, "TestFanoutSubscribers", fanoutEnv+"="+path+","+strconv.Itoa(n))
	if line, err := br.ReadString('\n'); err != nil || line != "ready\n" {
		b.Fatalf("subscriber process: %q, %v", line, err)
	}
	return child, br
}

// cpuTime is this process's user and system CPU time.
func cpuTime() time.Duration {
	var ru syscall.Rusage
	syscall.Getrusage(syscall.RUSAGE_SELF, &ru)
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}

// procCPUTime is the user and system CPU time of process pid, from
// /proc/pid/stat (in clock ticks, assumed 100 a second), or -1 when it
// cannot be read.
func procCPUTime(pid int) time.Duration {
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		return -1
	}
	// The fields after the command name, which is in parentheses.
	_, rest, ok := strings.Cut(string(b), ") ")
	f := strings.Fields(rest)
	if !ok || len(f) < 13 {
		return -1
	}
	utime, err1 := strconv.ParseInt(f[11], 10, 64)
	stime, err2 := strconv.ParseInt(f[12], 10, 64)
	if err1 != nil || err2 != nil {
		return -1
	}
	return time.Duration(utime+stime) * 10 * time.Millisecond
}

const fanoutEnv = "STEPDOWN_FANOUT_SUBSCRIBERS"

// TestFanoutSubscribers is BenchmarkFanout's child process: it connects n
// subscribers, prints "ready" once all have their hello, then writes one byte
// each time the last subscriber has received an event.
func TestFanoutSubscribers(t *testing.T) {
	spec := os.Getenv(fanoutEnv)
	if spec == "" {
		t.Skip("only run as BenchmarkFanout's child process")
	}
	path, ns, _ := strings.Cut(spec, ",")
	n, _ := strconv.Atoi(ns)
	raiseFDLimit(uint64(n + 1024))
	var remaining atomic.Int64
	remaining.Store(int64(n))
	arrived := make(chan struct{}, 1024)
	hellos := make(chan struct{}, n)
	for range n {
		var c net.Conn
		var err error
		for try := 0; ; try++ {
			c, err = net.Dial("unix", path)
			if err == nil || !errors.Is(err, syscall.EAGAIN) || try > 1000 {
				break
			}
			time.Sleep(time.Millisecond) // accept backlog full
		}
		if err != nil {
			t.Fatal(err)
		}
		go func() {
			br := bufio.NewReader(c)
			if _, err := br.ReadSlice('\n'); err != nil {
				return
			}
			hellos <- struct{}{}
			for {
				if _, err := br.ReadSlice('\n'); err != nil {
					return
				}
				if remaining.Add(-1) == 0 {
					remaining.Store(int64(n))
					arrived <- struct{}{}
				}
			}
		}()
	}
	for range n {
		<-hellos
	}
	os.Stdout.WriteString("ready\n")
	for range arrived {
		os.Stdout.Write([]byte{1})
	}
}
