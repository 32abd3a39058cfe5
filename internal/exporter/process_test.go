package exporter

import (
	"os"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/collectors"
	dto "github.com/prometheus/client_model/go"
)

// TestProcessCollectorMatchesClientGolang: the same families, types and
// help as client_golang's process collector, and values that agree with it
// (read a moment apart, so within what changes in that moment).
func TestProcessCollectorMatchesClientGolang(t *testing.T) {
	gather := func(c prometheus.Collector) map[string]*dto.MetricFamily {
		t.Helper()
		reg := prometheus.NewPedanticRegistry()
		reg.MustRegister(c)
		mfs, err := reg.Gather()
		if err != nil {
			t.Fatal(err)
		}
		m := map[string]*dto.MetricFamily{}
		for _, mf := range mfs {
			m[mf.GetName()] = mf
		}
		return m
	}
	f, err := os.Open("/proc/self/fd") // one more descriptor, seen by both
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	// Ours is read between two reads of client_golang's, so that a figure
	// moving meanwhile (parallel tests map memory) is judged against the
	// range it moved through.
	theirsOpts := collectors.ProcessCollectorOpts{}
	before := gather(collectors.NewProcessCollector(theirsOpts))
	ours := gather(NewProcessCollector())
	theirs := gather(collectors.NewProcessCollector(theirsOpts))
	if len(ours) != len(theirs) || len(ours) != 9 {
		t.Fatalf("%d families, client_golang's %d, want 9 each", len(ours), len(theirs))
	}
	value := func(mf *dto.MetricFamily) float64 {
		m := mf.GetMetric()[0]
		if m.Counter != nil {
			return m.GetCounter().GetValue()
		}
		return m.GetGauge().GetValue()
	}
	tolerance := map[string]float64{
		"process_cpu_seconds_total":            0.05, // client_golang's is in 10 ms ticks
		"process_open_fds":                     2,    // its own directory descriptor, a runtime one
		"process_resident_memory_bytes":        4 << 20,
		"process_virtual_memory_bytes":         64 << 20,
		"process_start_time_seconds":           0.011,
		"process_network_receive_bytes_total":  1e6, // the network namespace's, moving
		"process_network_transmit_bytes_total": 1e6,
	}
	for name, want := range theirs {
		got, ok := ours[name]
		if !ok {
			t.Errorf("%s missing", name)
			continue
		}
		if got.GetType() != want.GetType() || got.GetHelp() != want.GetHelp() {
			t.Errorf("%s: type %v help %q, client_golang's %v %q", name, got.GetType(), got.GetHelp(), want.GetType(), want.GetHelp())
		}
		lo, hi := value(want), value(want)
		if b, ok := before[name]; ok {
			lo, hi = min(lo, value(b)), max(hi, value(b))
		}
		if v := value(got); v < lo-tolerance[name] || v > hi+tolerance[name] {
			t.Errorf("%s = %v, client_golang's %v..%v around it (more than %v outside)", name, v, lo, hi, tolerance[name])
		}
	}
}

// TestProcessCollectorReusesNetstat: the network counters are read at most
// every NetstatMaxAge.
func TestProcessCollectorReusesNetstat(t *testing.T) {
	t.Parallel()
	c := NewProcessCollector()
	now := time.Unix(1000, 0)
	c.now = func() time.Time { return now }
	reg := prometheus.NewRegistry()
	reg.MustRegister(c)
	reg.Gather()
	c.in = -1 // what a reread would overwrite
	reg.Gather()
	if c.in != -1 {
		t.Errorf("netstat read again within NetstatMaxAge")
	}
	now = now.Add(NetstatMaxAge)
	reg.Gather()
	if c.in == -1 {
		t.Errorf("netstat not read again after NetstatMaxAge")
	}
}

func BenchmarkProcessCollector(b *testing.B) {
	for _, bc := range []struct {
		name string
		c    prometheus.Collector
	}{{"clockwatch", NewProcessCollector()}, {"client_golang", collectors.NewProcessCollector(collectors.ProcessCollectorOpts{})}} {
		b.Run(bc.name, func(b *testing.B) {
			reg := prometheus.NewRegistry()
			reg.MustRegister(bc.c)
			b.ReportAllocs()
			for b.Loop() {
				if _, err := reg.Gather(); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}
