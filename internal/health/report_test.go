package health

import (
	"bytes"
	"testing"
	"time"

	"github.com/clockwatch/clockwatch/internal/kernel"
	"github.com/clockwatch/clockwatch/internal/loop"
	"github.com/clockwatch/clockwatch/internal/probe/chrony"
)

// TestWriteVerboseGolden: --verbose adds the wall−boot gap, saying what it is;
// each frequency line says whose it is.
func TestWriteVerboseGolden(t *testing.T) {
	t.Parallel()
	f := Facts{
		Clocks: &kernel.Sample{Mono: 5e9, Boot: 65e9, Real: 1_795_000_000_123_456_789, TAI: 1_795_000_037_123_457_789, Window: 1500},
		Kernel: &kernel.Timex{State: kernel.TimeOK, MaxError: 20 * time.Millisecond, Frequency: -12.5e-6, TAI: 37 * time.Second},
	}
	d := chrony.Data{Tracking: chrony.Tracking{RefName: "ntp1", Stratum: 2, Leap: chrony.LeapNormal, Frequency: -12.25e-6}}
	f.AddSource(chrony.Snapshot{Tally: loop.Tally{Polls: 1, Up: true}, HaveData: true, Data: d}.Reading(), d.StatusLines()...)
	var buf bytes.Buffer
	if err := WriteVerbose(&buf, f, Judge(f, testThresholds())); err != nil {
		t.Fatal(err)
	}
	checkGolden(t, "status-verbose.golden", buf.Bytes())
}
