package daemon

import (
	"bufio"
	"context"
	"io"
	"log/slog"
	"net"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"golang.org/x/sync/errgroup"

	"github.com/clockwatch/clockwatch/internal/config"
	"github.com/clockwatch/clockwatch/internal/host"
	"github.com/clockwatch/clockwatch/internal/hostclock"
	"github.com/clockwatch/clockwatch/internal/hostclock/hostclocktest"
	"github.com/clockwatch/clockwatch/internal/journal"
	"github.com/clockwatch/clockwatch/internal/step"
	"github.com/clockwatch/clockwatch/internal/timesources"
)

// BenchmarkMarkToSocket measures clockwatch's own part of the detection
// latency on this machine, the part that holds on hardware (the VM figures
// include TCG): from a clock-set mark's CLOCK_MONOTONIC to the step event on
// the bus, and to a subscriber reading the stepdown message from the real
// unix socket. Each iteration steps the wall clock the sampler reads by
// ±250 ms and sends the mark the watcher would. It reports the p50 and p99
// of both and the daemon's own histograms' means.
//
//	go test -run '^$' -bench MarkToSocket -benchtime=500x -cpu 1,2 ./internal/daemon/
func BenchmarkMarkToSocket(b *testing.B) {
	// scraping: the marks come while the process is busy with scrape-sized
	// bursts of work (0.7 ms of CPU every 2 ms, hundreds of scrapes a
	// second), the worst case for a daemon run with GOMAXPROCS=1 (its
	// default): the sampler then waits for the burst to end. Run with
	// -cpu 1,2 to compare.
	for _, load := range []bool{false, true} {
		name := "idle"
		if load {
			name = "scraping"
		}
		b.Run(name, func(b *testing.B) {
			if load {
				stop := make(chan struct{})
				done := make(chan struct{})
				go scrapeBursts(stop, done)
				defer func() { close(stop); <-done }()
			}
			var toBus, toSocket []time.Duration
			m := runMarks(b, func(iter func()) {
				for b.Loop() {
					iter()
				}
			}, &toBus, &toSocket)
			q := func(ds []time.Duration, f float64) float64 {
				s := slices.Clone(ds)
				slices.Sort(s)
				return float64(s[min(int(f*float64(len(s))), len(s)-1)].Nanoseconds()) / 1e3
			}
			b.ReportMetric(q(toBus, 0.5), "bus-p50-µs")
			b.ReportMetric(q(toBus, 0.99), "bus-p99-µs")
			b.ReportMetric(q(toBus, 1), "bus-max-µs")
			b.ReportMetric(q(toSocket, 0.5), "read-p50-µs")
			b.ReportMetric(q(toSocket, 0.99), "read-p99-µs")
			if m.pubN > 0 {
				b.ReportMetric(m.pubSum/float64(m.pubN)*1e6, "publish-metric-mean-µs")
			}
			if m.writeN > 0 {
				b.ReportMetric(m.writeSum/float64(m.writeN)*1e6, "write-metric-mean-µs")
			}
		})
	}
}

// scrapeBursts keeps a goroutine busy 0.7 ms out of every 2 ms, as a
// scrape's encoding would, until stop is closed.
func scrapeBursts(stop <-chan struct{}, done chan<- struct{}) {
	defer close(done)
	t := time.NewTicker(2 * time.Millisecond)
	defer t.Stop()
	for {
		select {
		case <-stop:
			return
		case <-t.C:
		}
		for start := time.Now(); time.Since(start) < 700*time.Microsecond; {
		}
	}
}

// TestMarkLatencyMetrics: each marked step counts once in both histograms.
func TestMarkLatencyMetrics(t *testing.T) {
	var toBus, toSocket []time.Duration
	m := runMarks(t, func(iter func()) {
		for range 3 {
			iter()
		}
	}, &toBus, &toSocket)
	if m.pubN != 3 || m.writeN != 3 {
		t.Errorf("histogram counts: publish %d, write %d; want 3 each", m.pubN, m.writeN)
	}
	for i := range toSocket {
		if toBus[i] <= 0 || toSocket[i] <= 0 {
			t.Errorf("iteration %d: to bus %v, to socket %v; want both positive", i, toBus[i], toSocket[i])
		}
	}
}

// markMetrics are the daemon's own latency histograms after a run.
type markMetrics struct {
	pubN, writeN     uint64
	pubSum, writeSum float64
}

// runMarks wires the sampler (fed marks by loop's iterations), the bus,
// the journal, the announcer and its stepdown socket with one subscriber on
// the real socket, and runs loop; each call of its iter argument steps the clock,
// marks it, and waits for the event on the bus and the stepdown line.
func runMarks(tb testing.TB, loop func(iter func()), toBus, toSocket *[]time.Duration) markMetrics {
	dir := tb.TempDir()
	cfg := step.DefaultConfig()
	logger := slog.New(slog.NewTextHandler(io.Discard, nil))
	clocks := &hostclocktest.Clocks{Origin: hostclocktest.Host}
	s := NewSteps(cfg, journal.Config{Dir: dir, MaxBytes: 64 << 20}, clocks, logger)
	// The marks come from the benchmark, not from the kernel.
	marks := make(chan hostclock.Mark, 1)
	s.Sampler = step.NewSampler(cfg, clocks, marks, step.NewDetector(cfg, s.Journal.State()), logger,
		func(e step.Event) { s.Collector.Record(e) }, s.Bus.Publish)
	bus := s.Bus.Subscribe(16)
	defer bus.Close()
	scfg := config.DefaultStepdown()
	scfg.Socket = filepath.Join(dir, "stepdown.sock")
	sd, err := newTestStepdown(scfg, s, timesources.Members{timesources.Kernel(hostclock.SysTimex{})}, "", FeedOptions{Poll: time.Hour}, logger)
	if err != nil {
		tb.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	g, gctx := errgroup.WithContext(ctx)
	for _, task := range append(s.Tasks()[1:], sd.Tasks()[:2]...) { // no kernel watcher, no chrony poll
		g.Go(func() error { return task(gctx) })
	}
	defer func() {
		cancel()
		g.Wait()
	}()
	<-s.Ready()
	conn, err := net.Dial("unix", scfg.Socket)
	if err != nil {
		tb.Fatal(err)
	}
	defer conn.Close()
	r := bufio.NewReader(conn)
	if _, err := r.ReadString('\n'); err != nil { // hello
		tb.Fatal(err)
	}
	sign := time.Duration(1)
	loop(func() {
		clocks.Step(sign * 250 * time.Millisecond)
		sign = -sign
		mark := host.Monotonic()
		marks <- hostclock.Mark{Mono: mark}
		e := <-bus.C()
		*toBus = append(*toBus, time.Duration(host.Monotonic()-mark))
		if e.Type != step.TypeStep {
			tb.Fatalf("event %+v, want a step", e)
		}
		for {
			line, err := r.ReadString('\n')
			if err != nil {
				tb.Fatal(err)
			}
			if strings.Contains(line, `"type":"stepdown"`) {
				break
			}
		}
		*toSocket = append(*toSocket, time.Duration(host.Monotonic()-mark))
	})
	var m markMetrics
	m.pubN, m.pubSum, _ = s.Sampler.Gauges().Published().Snapshot()
	// The feed records the write after Step returns: wait for it.
	for deadline := time.Now().Add(5 * time.Second); time.Now().Before(deadline); time.Sleep(time.Millisecond) {
		if m.writeN, m.writeSum, _ = sd.Feed.WriteDelay.h.Snapshot(); m.writeN >= uint64(len(*toSocket)) {
			break
		}
	}
	return m
}
