package hostclock

import (
	"testing"
	"time"

	"golang.org/x/sys/unix"

	"github.com/clockwatch/clockwatch/internal/kernel"
)

// The real readers need no privilege; check that what they read is sane.
func TestSysClocks(t *testing.T) {
	t.Parallel()
	var a, b kernel.Sample
	if err := (SysClocks{}).ReadClocks(&a); err != nil {
		t.Fatal(err)
	}
	time.Sleep(20 * time.Millisecond)
	if err := (SysClocks{}).ReadClocks(&b); err != nil {
		t.Fatal(err)
	}
	if a.Window <= 0 || a.Window > int64(10*time.Millisecond) {
		t.Errorf("read window = %v, want a few µs", a.Uncertainty())
	}
	//clockwatch:wallclock-ok the test checks REALTIME against the wall clock time.Now reads
	if wall := time.Unix(0, a.Real); time.Since(wall).Abs() > time.Minute {
		t.Errorf("REALTIME %v is far from time.Now()", wall)
	}
	if a.Suspended() < 0 {
		t.Errorf("BOOTTIME−MONOTONIC = %v, want ≥ 0", a.Suspended())
	}
	if d := b.Mono - a.Mono; d < int64(20*time.Millisecond) {
		t.Errorf("MONOTONIC advanced %v over a 20ms sleep", time.Duration(d))
	}
	if f, ok := kernel.FrequencyCorrection(a, b); !ok || f > 0.01 || f < -0.01 {
		t.Errorf("FrequencyCorrection() = %g, %v; want a small ratio", f, ok)
	}
	if off := a.TAIOffset(); off < 0 || off > 100*time.Second {
		t.Errorf("TAI−REALTIME = %v", off)
	}
}

func TestSysTimex(t *testing.T) {
	t.Parallel()
	raw, err := (SysTimex{}).ReadTimex()
	if err != nil {
		t.Fatal(err)
	}
	tx := kernel.Decode(raw)
	if tx.Tick <= 0 {
		t.Errorf("tick = %v, want > 0", tx.Tick)
	}
	if tx.Tolerance <= 0 {
		t.Errorf("tolerance = %g, want > 0", tx.Tolerance)
	}
	if tx.MaxError < 0 || tx.MaxError > kernel.MaxErrorSaturated {
		t.Errorf("maxerror = %v out of range", tx.MaxError)
	}
}

func BenchmarkReadClocks(b *testing.B) {
	var s kernel.Sample
	c := SysClocks{}
	b.ReportAllocs()
	for b.Loop() {
		if err := c.ReadClocks(&s); err != nil {
			b.Fatal(err)
		}
	}
}

func BenchmarkReadTimex(b *testing.B) {
	r := SysTimex{}
	b.ReportAllocs()
	for b.Loop() {
		if _, err := r.ReadTimex(); err != nil {
			b.Fatal(err)
		}
	}
}

// Mono comes from the runtime's vDSO reading; it must be CLOCK_MONOTONIC
// itself, not an offset copy, or every derived gap would be wrong.
func TestSysClocksMonoIsClockMonotonic(t *testing.T) {
	t.Parallel()
	var s kernel.Sample
	var ts unix.Timespec
	if err := (SysClocks{}).ReadClocks(&s); err != nil {
		t.Fatal(err)
	}
	if err := unix.ClockGettime(unix.CLOCK_MONOTONIC, &ts); err != nil {
		t.Fatal(err)
	}
	if d := time.Duration(ts.Nano() - s.Mono); d < 0 || d > 100*time.Millisecond {
		t.Errorf("CLOCK_MONOTONIC − Sample.Mono = %v, want a small positive gap", d)
	}
}
