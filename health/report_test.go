package health

import (
	"bytes"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/clockwatch/clockwatch/config"
	"github.com/clockwatch/clockwatch/probe"
	"github.com/clockwatch/clockwatch/probe/chrony"
)

// TestWriteVerboseGolden: --verbose adds the wall−boot gap, saying what it is;
// each frequency line says whose it is.
func TestWriteVerboseGolden(t *testing.T) {
	t.Parallel()
	f := Facts{
		Clocks: &probe.Sample{Mono: 5e9, Boot: 65e9, Real: 1_795_000_000_123_456_789, TAI: 1_795_000_037_123_457_789, Window: 1500},
		Kernel: &probe.Timex{State: probe.TimeOK, MaxError: 20 * time.Millisecond, Frequency: -12.5e-6, TAI: 37 * time.Second},
		Chrony: &chrony.Data{Tracking: chrony.Tracking{RefName: "ntp1", Stratum: 2, Leap: chrony.LeapNormal, Frequency: -12.25e-6}},
	}
	var buf bytes.Buffer
	if err := WriteVerbose(&buf, f, Judge(f, config.Default().Health)); err != nil {
		t.Fatal(err)
	}
	golden := filepath.Join("testdata", "status-verbose.golden")
	if *update {
		if err := os.WriteFile(golden, buf.Bytes(), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	want, err := os.ReadFile(golden)
	if err != nil {
		t.Fatalf("%v (run with -update)", err)
	}
	if diff := cmp.Diff(string(want), buf.String()); diff != "" {
		t.Errorf("WriteVerbose() mismatch (-want +got):\n%s", diff)
	}
}
