package boundedtime

import (
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
