package apiserver

import (
	"context"
	"fmt"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"
)

// cost measures one clockwatch: RSS, CPU over an idle window, and CPU per
// scrape, from /proc/PID/schedstat (nanoseconds on the CPU) and
// /proc/PID/status, as scripts/bench-daemon.sh does.
type cost struct {
	RSSKiB       int
	IdleCPUPct   float64
	ScrapeCPUms  float64
	idle, scrape time.Duration
}

func (c cost) String() string {
	return fmt.Sprintf("RSS %.1f MB, idle CPU %.3f %% of a core (%s), CPU per scrape %.2f ms", float64(c.RSSKiB)/1024, c.IdleCPUPct, c.idle, c.ScrapeCPUms)
}

func onCPU(t *testing.T, pid int) time.Duration {
	t.Helper()
	// Every thread's: /proc/PID/schedstat is the main thread's alone.
	tasks, err := filepath.Glob(fmt.Sprintf("/proc/%d/task/*/schedstat", pid))
	if err != nil || len(tasks) == 0 {
		t.Fatalf("no threads of %d: %v", pid, err)
	}
	var sum time.Duration
	for _, p := range tasks {
		b, err := os.ReadFile(p)
		if err != nil {
			continue // a thread that ended
		}
		ns, err := strconv.ParseInt(strings.Fields(string(b))[0], 10, 64)
		if err != nil {
			t.Fatal(err)
		}
		sum += time.Duration(ns)
	}
	return sum
}

func rssKiB(t *testing.T, pid int) int {
	t.Helper()
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/status", pid))
	if err != nil {
		t.Fatal(err)
	}
	for _, l := range strings.Split(string(b), "\n") {
		if f := strings.Fields(l); len(f) >= 2 && f[0] == "VmRSS:" {
			n, _ := strconv.Atoi(f[1])
			return n
		}
	}
	return 0
}

// measure runs the idle window and the scrapes on the daemons together
// (interleaved scrapes), so that both see the same machine.
func measure(t *testing.T, ds map[string]*daemon, idle time.Duration, scrapes int) map[string]cost {
	t.Helper()
	out := map[string]cost{}
	start := map[string]time.Duration{}
	for n, d := range ds {
		start[n] = onCPU(t, d.proc.cmd.Process.Pid)
	}
	time.Sleep(idle)
	for n, d := range ds {
		c := out[n]
		c.idle = idle
		c.IdleCPUPct = 100 * float64(onCPU(t, d.proc.cmd.Process.Pid)-start[n]) / float64(idle)
		c.RSSKiB = rssKiB(t, d.proc.cmd.Process.Pid)
		out[n] = c
		start[n] = onCPU(t, d.proc.cmd.Process.Pid)
	}
	hc := &http.Client{Timeout: 5 * time.Second}
	for range scrapes {
		for _, d := range ds {
			resp, err := hc.Get(d.metricsURL)
			if err != nil {
				t.Fatal(err)
			}
			io.Copy(io.Discard, resp.Body)
			resp.Body.Close()
		}
	}
	for n, d := range ds {
		c := out[n]
		c.ScrapeCPUms = float64(onCPU(t, d.proc.cmd.Process.Pid)-start[n]) / float64(time.Millisecond) / float64(scrapes)
		out[n] = c
	}
	return out
}

// costOffOn is the cost table of docs/kubernetes.md: the same binary with
// the transport off and on (the API server up, the condition kept).
func costOffOn(ctx context.Context, t *testing.T, env *transportEnv, report *strings.Builder) {
	idle := 120 * time.Second
	if s := os.Getenv("CLOCKWATCH_K8S_BENCH_IDLE"); s != "" {
		d, err := time.ParseDuration(s)
		if err != nil {
			t.Fatal(err)
		}
		idle = d
	}
	on := env.daemon(ctx, env.node(ctx, "node-cost"))
	if err := on.waitCondition(ctx, 30*time.Second, "False", "ClockTrusted", ""); err != nil {
		t.Fatal(err)
	}
	off := env.daemonOff(ctx)
	time.Sleep(5 * time.Second) // both past their start
	res := measure(t, map[string]*daemon{"off": off, "on": on}, idle, 500)
	fi, err := os.Stat(env.bin)
	if err != nil {
		t.Fatal(err)
	}
	fmt.Fprintf(report, "cost, binary %.1f MB: transport off: %s\n", float64(fi.Size())/1e6, res["off"])
	fmt.Fprintf(report, "cost, binary %.1f MB: transport on:  %s\n", float64(fi.Size())/1e6, res["on"])
}
