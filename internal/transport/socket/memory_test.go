package socket_test

import (
	"bufio"
	"bytes"
	"context"
	"fmt"
	"io"
	"os"
	"os/exec"
	"runtime"
	"strconv"
	"strings"
	"testing"
	"time"

	"golang.org/x/sys/unix"

	"github.com/clockwatch/clockwatch/internal/transport/socket"
)

// maxSubscriberBytes is the goal of issue 36 item 3: the Go heap and stacks
// one subscriber at rest costs the daemon, so that the DaemonSet fits 64 Mi
// at the default stepdown.max_clients.
const maxSubscriberBytes = 4096

// subscriberCost is what n subscribers at rest cost the server, per
// subscriber, in bytes.
type subscriberCost struct {
	heap, stack, rss float64 // live heap after a GC, stacks in use, VmRSS
}

// measureSubscribers admits n subscribers over real unix sockets to a real
// server and returns what they cost it. The subscribers live in a child
// process (this test binary again, TestMemorySubscribers): raw descriptors
// read with blocking system calls, each read until its hello.
func measureSubscribers(tb testing.TB, n int) subscriberCost {
	tb.Helper()
	if lim := raiseFDLimit(uint64(n + 1024)); lim < uint64(n+256) {
		tb.Skipf("RLIMIT_NOFILE %d is too low for %d subscribers", lim, n)
	}
	cfg := testConfig(tb)
	// No heartbeat while measuring: it would fill the silent subscribers'
	// sockets and start writers, which is a laggard's cost, not a
	// subscriber's.
	cfg.Heartbeat = time.Hour
	cfg.MaxClients = n
	// Run here, not with start: a benchmark's iterations each stop theirs.
	s, ann := newServer(tb, cfg, socket.Options{})
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- s.Run(ctx) }()
	<-s.Ready()
	ann.ProbeOK("test")
	defer func() {
		cancel()
		if err := <-done; err != nil {
			tb.Errorf("Run: %v", err)
		}
	}()

	heap0, stack0, rss0 := memNow()
	child := exec.Command(os.Args[0], "-test.run=^TestMemorySubscribers$")
	child.Env = append(os.Environ(), memoryEnv+"="+cfg.Socket+","+strconv.Itoa(n))
	child.Stderr = os.Stderr
	stop, err := child.StdinPipe()
	if err != nil {
		tb.Fatal(err)
	}
	out, err := child.StdoutPipe()
	if err != nil {
		tb.Fatal(err)
	}
	if err := child.Start(); err != nil {
		tb.Fatal(err)
	}
	defer func() { stop.Close(); child.Wait() }()
	if line, err := bufio.NewReader(out).ReadString('\n'); err != nil || line != "ready\n" {
		tb.Fatalf("subscriber process: %q, %v", line, err)
	}
	if got := s.Subscribers(); got != n {
		tb.Fatalf("%d subscribers connected, want %d", got, n)
	}
	heap1, stack1, rss1 := memNow()
	return subscriberCost{
		heap:  float64(int64(heap1-heap0)) / float64(n),
		stack: float64(int64(stack1-stack0)) / float64(n),
		rss:   float64(rss1-rss0) / float64(n),
	}
}

const memoryEnv = "STEPDOWN_MEMORY_SUBSCRIBERS"

// TestMemorySubscribers is measureSubscribers's child process: it connects
// n subscribers, reads each one's hello, prints "ready" and holds them until
// its standard input closes.
func TestMemorySubscribers(t *testing.T) {
	spec := os.Getenv(memoryEnv)
	if spec == "" {
		t.Skip("only run as measureSubscribers's child process")
	}
	path, ns, _ := strings.Cut(spec, ",")
	n, _ := strconv.Atoi(ns)
	raiseFDLimit(uint64(n + 1024))
	hello := make([]byte, 4096)
	for i := range n {
		fd, err := unix.Socket(unix.AF_UNIX, unix.SOCK_STREAM|unix.SOCK_CLOEXEC, 0)
		if err != nil {
			t.Fatal(err)
		}
		// Blocking: a full accept backlog makes connect wait.
		if err := unix.Connect(fd, &unix.SockaddrUnix{Name: path}); err != nil {
			t.Fatalf("subscriber %d: connecting: %v", i, err)
		}
		k, err := unix.Read(fd, hello)
		if err != nil || !bytes.Contains(hello[:k], []byte(`"type":"hello"`)) {
			t.Fatalf("subscriber %d: first read %q, %v; want a hello", i, hello[:k], err)
		}
	}
	os.Stdout.WriteString("ready\n")
	io.Copy(io.Discard, os.Stdin)
}

// memNow is the live heap and the stacks in use after two collections (the
// second shrinks stacks the first found oversized), and VmRSS.
func memNow() (heap, stack uint64, rss int64) {
	runtime.GC()
	runtime.GC()
	var ms runtime.MemStats
	runtime.ReadMemStats(&ms)
	return ms.HeapAlloc, ms.StackInuse, vmRSS()
}

// vmRSS is this process's resident set in bytes, from /proc/self/status.
func vmRSS() int64 {
	b, err := os.ReadFile("/proc/self/status")
	if err != nil {
		return 0
	}
	for l := range strings.SplitSeq(string(b), "\n") {
		if v, ok := strings.CutPrefix(l, "VmRSS:"); ok {
			kb, _ := strconv.ParseInt(strings.TrimSuffix(strings.TrimSpace(v), " kB"), 10, 64)
			return kb << 10
		}
	}
	return 0
}

// parkedStack is the stack of a goroutine parked right after it started:
// the smallest a goroutine has in this build (2 KiB; the race detector's
// builds double it).
func parkedStack() float64 {
	const k = 1000
	release := make(chan struct{})
	_, stack0, _ := memNow()
	for range k {
		go func() { <-release }()
	}
	_, stack1, _ := memNow()
	close(release)
	return float64(int64(stack1-stack0)) / k
}

func TestSubscriberMemory(t *testing.T) {
	if testing.Short() {
		t.Skip("admits 4,096 subscribers")
	}
	floor := parkedStack()
	got := measureSubscribers(t, 4096)
	t.Logf("per subscriber: heap %.0f B, stacks %.0f B (a parked goroutine's: %.0f B), VmRSS %.0f B", got.heap, got.stack, floor, got.rss)
	if sum := got.heap + got.stack; sum > maxSubscriberBytes {
		t.Errorf("a subscriber costs %.0f bytes of Go heap and stacks (heap %.0f, stacks %.0f), want at most %d",
			sum, got.heap, got.stack, maxSubscriberBytes)
	}
	// At rest a subscriber has no goroutine: the input poller reads for
	// all of them, and a writer runs only while something waits.
	if got.stack > floor/4 {
		t.Errorf("a subscriber holds %.0f bytes of stacks, a goroutine's (%.0f) or more: want none", got.stack, floor)
	}
}

// BenchmarkSubscriberMemory reports what a subscriber at rest costs the
// server (docs/performance.md): Go heap and stacks per subscriber. ns/op is
// the time to admit them all. The resident set is scripts/memflood's: in a
// loop, later iterations reuse the pages the first made resident.
func BenchmarkSubscriberMemory(b *testing.B) {
	for _, n := range []int{4096, 10000} {
		b.Run(fmt.Sprintf("subscribers=%d", n), func(b *testing.B) {
			var sum subscriberCost
			for b.Loop() {
				got := measureSubscribers(b, n)
				sum.heap += got.heap
				sum.stack += got.stack
			}
			b.ReportMetric(sum.heap/float64(b.N), "heap-B/subscriber")
			b.ReportMetric(sum.stack/float64(b.N), "stack-B/subscriber")
			b.ReportMetric((sum.heap+sum.stack)/float64(b.N), "go-B/subscriber")
		})
	}
}

// writers counts the goroutines writing to a client that fell behind.
func writers() int {
	buf := make([]byte, 1<<20)
	return strings.Count(string(buf[:runtime.Stack(buf, true)]), "socket.(*client).writeLoop(")
}

// TestWriterEndsOnceCaughtUp: a client that falls behind gets a writer
// goroutine, and loses it once it has read what waited, while its messages
// stay in order.
func TestWriterEndsOnceCaughtUp(t *testing.T) {
	cfg := testConfig(t)
	cfg.Heartbeat = 10 * time.Millisecond
	cfg.QueueSize = 1000 // not cut off while the test waits
	s, _ := start(t, cfg, socket.Options{})
	c, hello := dial(t, cfg.Socket)
	// It stops reading: heartbeats fill its socket buffer, then its queue.
	waitFor(t, "a writer goroutine", func() bool { return writers() == 1 })
	// It reads again, and checks that the seqs never go back.
	stop := make(chan struct{})
	done := make(chan error, 1)
	go func() {
		seq := hello.Seq
		for {
			select {
			case <-stop:
				done <- nil
				return
			default:
			}
			c.SetReadDeadline(time.Now().Add(10 * time.Second))
			m, err := c.Read()
			if err != nil {
				done <- err
				return
			}
			if m.Seq < seq {
				done <- fmt.Errorf("seq %d after %d", m.Seq, seq)
				return
			}
			seq = m.Seq
		}
	}()
	waitFor(t, "no writer goroutine", func() bool { return writers() == 0 })
	close(stop)
	if err := <-done; err != nil {
		t.Fatal(err)
	}
	if got := metricValue(t, s, socket.MetricDisconnects, "cause", socket.CauseLaggard); got != 0 {
		t.Errorf("%v laggards cut off, want none", got)
	}
}
