package step

import (
	"context"
	"testing"
	"time"

	"golang.org/x/sys/unix"

	"github.com/clockwatch/clockwatch/internal/hostclock"
)

func cpuTime(b *testing.B) time.Duration {
	var ru unix.Rusage
	if err := unix.Getrusage(unix.RUSAGE_SELF, &ru); err != nil {
		b.Fatal(err)
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}

// BenchmarkSamplerAt100ms runs the real Sampler on the real clocks at the
// default interval and reports the process CPU time per tick and as a share
// of one core. It includes the Go runtime's own background work (sysmon,
// timers), so it is an upper bound on what sampling costs.
func BenchmarkSamplerAt100ms(b *testing.B) {
	cfg := DefaultConfig()
	s := NewSampler(cfg, hostclock.SysClocks{}, make(chan hostclock.Mark), NewDetector(cfg, State{}), discardLogger())
	ctx, cancel := context.WithCancel(b.Context())
	done := make(chan error)
	go func() { done <- s.Run(ctx) }()
	<-s.Ready()
	start := s.Gauges().Load().Samples
	cpu0, wall0 := cpuTime(b), time.Now()
	b.ResetTimer()
	time.Sleep(time.Duration(b.N) * cfg.Interval) // one wake-up, not a polling loop
	b.StopTimer()
	cpu, wall := cpuTime(b)-cpu0, time.Since(wall0)
	ticks := s.Gauges().Load().Samples - start
	cancel()
	<-done
	b.ReportMetric(float64(cpu.Nanoseconds())/float64(max(ticks, 1)), "cpu-ns/tick")
	b.ReportMetric(100*cpu.Seconds()/wall.Seconds(), "%core")
}

// BenchmarkBareTickerAt100ms is the floor BenchmarkSamplerAt100ms stands on:
// a goroutine woken by a 100 ms ticker that does nothing. On a VM the wake-up
// itself (timer interrupt, scheduler, the vCPU leaving idle) dominates.
func BenchmarkBareTickerAt100ms(b *testing.B) {
	t := time.NewTicker(100 * time.Millisecond)
	defer t.Stop()
	cpu0, wall0 := cpuTime(b), time.Now()
	b.ResetTimer()
	for range b.N {
		<-t.C
	}
	b.StopTimer()
	cpu, wall := cpuTime(b)-cpu0, time.Since(wall0)
	b.ReportMetric(float64(cpu.Nanoseconds())/float64(b.N), "cpu-ns/tick")
	b.ReportMetric(100*cpu.Seconds()/wall.Seconds(), "%core")
}
