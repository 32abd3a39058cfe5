package segment

import (
	"path/filepath"
	"testing"
	"time"

	"github.com/clockwatch/clockwatch/internal/clockbound"
	"github.com/clockwatch/clockwatch/internal/timesource"
)

// BenchmarkWrite is one publisher write: the clock, the verdict and the
// seqlocked store (docs/performance.md).
func BenchmarkWrite(b *testing.B) {
	seg, err := clockbound.Create(filepath.Join(b.TempDir(), "shm0"), 0o644, -1)
	if err != nil {
		b.Fatal(err)
	}
	reading := []timesource.Reading{{Source: "chrony", Role: timesource.Authoritative, Found: true, Up: true, HasData: true,
		Synchronized: true, ErrorBound: time.Millisecond, LastSuccess: time.Now()}}
	p := NewPublisher(clockbound.DefaultConfig(), seg, Options{Readings: func() []timesource.Reading { return reading }})
	defer seg.Close()
	b.ReportAllocs()
	for b.Loop() {
		if err := p.Write(); err != nil {
			b.Fatal(err)
		}
	}
}
