package chrony

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"net/http"
	"os"
	"os/exec"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/clockwatch/clockwatch/internal/chronydtest"
)

// cpuTime returns the user and system CPU time this process has used.
func cpuTime(b *testing.B) time.Duration {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		b.Fatal(err)
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}

// BenchmarkPollChronyd polls a real chronyd with 8 sources: tracking, the
// source count, and source data and sourcestats of each source (18
// requests: in 3 windows over the unix socket, one at a time over UDP;
// source names are cached after the first poll). cpu-ns/op is the CPU time
// of the whole test process per poll.
func BenchmarkPollChronyd(b *testing.B) {
	for _, tr := range []Transport{TransportUnix, TransportUDP} {
		b.Run(string(tr), func(b *testing.B) {
			port := 0
			if tr == TransportUDP {
				port = 32324
			}
			c := chronydtest.Start(b, chronydtest.Options{Sources: 8, CmdPort: port})
			cfg := DefaultConfig()
			cfg.Address = c.Socket
			if tr == TransportUDP {
				cfg.Address = fmt.Sprintf("127.0.0.1:%d", port)
			}
			cl := NewClient(cfg, nil)
			defer cl.Close()
			ctx := context.Background()
			for deadline := time.Now().Add(10 * time.Second); ; {
				d, err := cl.Poll(ctx)
				if err == nil && len(d.Sources) == 8 {
					break
				}
				if time.Now().After(deadline) {
					b.Fatalf("chronyd not ready: %v", err)
				}
				time.Sleep(10 * time.Millisecond)
			}
			b.ReportAllocs()
			b.ResetTimer()
			start := cpuTime(b)
			for b.Loop() {
				if _, err := cl.Poll(ctx); err != nil {
					b.Fatal(err)
				}
			}
			b.ReportMetric(float64(cpuTime(b)-start)/float64(b.N), "cpu-ns/op")
		})
	}
}

// BenchmarkChronyExporterScrape measures SuperQ/chrony_exporter scraping the
// same kind of chronyd (8 sources, tracking + sources + sourcestats, no DNS)
// for docs/performance.md. It runs only when CLOCKWATCH_BENCH_CHRONY_EXPORTER
// names its binary; cpu-ns/op is the exporter process's CPU per scrape.
func BenchmarkChronyExporterScrape(b *testing.B) {
	bin := os.Getenv("CLOCKWATCH_BENCH_CHRONY_EXPORTER")
	if bin == "" {
		b.Skip("set CLOCKWATCH_BENCH_CHRONY_EXPORTER to a chrony_exporter binary to compare")
	}
	c := chronydtest.Start(b, chronydtest.Options{Sources: 8})
	const listen = "127.0.0.1:39123"
	cmd := exec.Command(bin, "--chrony.address=unix://"+c.Socket, "--collector.sources", "--collector.sourcestats",
		"--no-collector.dns-lookups", "--collector.chmod-socket", "--web.listen-address="+listen)
	if err := cmd.Start(); err != nil {
		b.Fatal(err)
	}
	defer func() { cmd.Process.Kill(); cmd.Wait() }()
	get := func() (int, error) {
		resp, err := http.Get("http://" + listen + "/metrics")
		if err != nil {
			return 0, err
		}
		defer resp.Body.Close()
		body, err := io.ReadAll(resp.Body)
		return bytes.Count(body, []byte("chrony_sources_")), err
	}
	for deadline := time.Now().Add(10 * time.Second); ; {
		if n, err := get(); err == nil && n > 8*5 {
			break
		}
		if time.Now().After(deadline) {
			b.Fatal("chrony_exporter did not serve 8 sources within 10s")
		}
		time.Sleep(20 * time.Millisecond)
	}
	procCPU := func() time.Duration {
		st, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", cmd.Process.Pid))
		if err != nil {
			b.Fatal(err)
		}
		f := strings.Fields(string(st[bytes.LastIndexByte(st, ')')+2:]))
		ut, _ := strconv.Atoi(f[11])
		stt, _ := strconv.Atoi(f[12])
		return time.Duration(ut+stt) * 10 * time.Millisecond // USER_HZ = 100
	}
	b.ResetTimer()
	start := procCPU()
	for b.Loop() {
		if _, err := get(); err != nil {
			b.Fatal(err)
		}
	}
	b.ReportMetric(float64(procCPU()-start)/float64(b.N), "cpu-ns/op")
}
