package boundedtime

import (
	"os"
	"path/filepath"
	"testing"
	"time"
)

// BenchmarkNow measures one Now() on a mapped segment (docs/performance.md).
func BenchmarkNow(b *testing.B) {
	mono, err := monotonic()
	if err != nil {
		b.Fatal(err)
	}
	s := good()
	s.asOf = [2]int64{int64(mono / time.Second), int64(mono % time.Second)}
	s.voidAfter = [2]int64{s.asOf[0] + 1_000_000, 0}
	r, err := Open(writeFile(b, s.bytes()))
	if err != nil {
		b.Fatal(err)
	}
	defer r.Close()
	b.ReportAllocs()
	for b.Loop() {
		if _, _, _, err := r.Now(); err != nil {
			b.Fatal(err)
		}
	}
}

// BenchmarkTimeNow is the floor Now() is built on: time.Now(), which reads
// CLOCK_REALTIME and CLOCK_MONOTONIC through the vDSO.
func BenchmarkTimeNow(b *testing.B) {
	b.ReportAllocs()
	var sink time.Time
	for b.Loop() {
		sink = time.Now()
	}
	_ = sink
}

// benchReader opens a fresh segment, with the VMClock flag and a device
// page holding the same marker when vmclock is set.
func benchReader(b *testing.B, vmclock bool) *Reader {
	b.Helper()
	mono, err := monotonic()
	if err != nil {
		b.Fatal(err)
	}
	s := good()
	s.asOf = [2]int64{int64(mono / time.Second), int64(mono % time.Second)}
	s.voidAfter = [2]int64{s.asOf[0] + 1_000_000, 0}
	dev := ""
	if vmclock {
		s.marker, s.support = 3, 1
		dev = filepath.Join(b.TempDir(), "vmclock0")
		if err := os.WriteFile(dev, vmclockPage(3), 0o644); err != nil {
			b.Fatal(err)
		}
	}
	r, err := OpenVMClock(writeFile(b, s.bytes()), dev)
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { r.Close() })
	return r
}

// BenchmarkNowVMClock is Now on a segment with the VMClock flag: the
// device's marker is read under its seqlock and compared on every call.
func BenchmarkNowVMClock(b *testing.B) {
	r := benchReader(b, true)
	b.ReportAllocs()
	for b.Loop() {
		if _, _, st, err := r.Now(); err != nil || st != StatusSynchronized {
			b.Fatal(st, err)
		}
	}
}

// BenchmarkNowNanos is NowNanos: Now without building two time.Time values.
func BenchmarkNowNanos(b *testing.B) {
	r := benchReader(b, false)
	b.ReportAllocs()
	for b.Loop() {
		if _, _, _, err := r.NowNanos(); err != nil {
			b.Fatal(err)
		}
	}
}

// BenchmarkNowNanosVMClock is NowNanos with the VMClock check.
func BenchmarkNowNanosVMClock(b *testing.B) {
	r := benchReader(b, true)
	b.ReportAllocs()
	for b.Loop() {
		if _, _, st, err := r.NowNanos(); err != nil || st != StatusSynchronized {
			b.Fatal(st, err)
		}
	}
}
