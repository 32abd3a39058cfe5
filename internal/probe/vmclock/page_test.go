package vmclock

import (
	"bufio"
	"encoding/binary"
	"encoding/hex"
	"encoding/json"
	"errors"
	"flag"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
)

var update = flag.Bool("update", false, "rewrite the golden files in testdata/")

// readOD reads a page dumped in the guest with `od -A d -t x1 -v`.
func readOD(t *testing.T, name string) []byte {
	t.Helper()
	f, err := os.Open(filepath.Join("testdata", name))
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	var b []byte
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		fields := strings.Fields(sc.Text())
		if len(fields) < 2 {
			continue
		}
		x, err := hex.DecodeString(strings.Join(fields[1:], ""))
		if err != nil {
			t.Fatalf("%s: %v", name, err)
		}
		b = append(b, x...)
	}
	return b
}

// TestDecodeCapturedPages decodes the pages qemu 10's vmclock device showed
// a Linux 7.3.4 guest before and after a live migration (test/vm
// TestVMClockMigrationInVM dumps them): magic VCLK, a page of 4096 bytes,
// version 1, no counter (0xff), only the marker filled in, 1 then 2.
func TestDecodeCapturedPages(t *testing.T) {
	t.Parallel()
	for _, name := range []string{"qemu10-booted", "qemu10-migrated"} {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			p, err := Decode(readOD(t, name+".od"))
			if err != nil {
				t.Fatal(err)
			}
			got, _ := json.MarshalIndent(p, "", "  ")
			golden := filepath.Join("testdata", name+".json")
			if *update {
				if err := os.WriteFile(golden, append(got, '\n'), 0o644); err != nil {
					t.Fatal(err)
				}
			}
			want, err := os.ReadFile(golden)
			if err != nil {
				t.Fatal(err)
			}
			if diff := cmp.Diff(strings.TrimSpace(string(want)), string(got)); diff != "" {
				t.Errorf("Decode(%s) (-want +got):\n%s", name, diff)
			}
			if p.HasTime() {
				t.Errorf("qemu's page offers a time (status %s): it fills only the marker", p.ClockStatus)
			}
		})
	}
}

// page builds a page with a time, error bounds and flags set, the way a
// hypervisor that offers time (EC2's Nitro) fills it.
func page() []byte {
	b := make([]byte, FullSize)
	le := binary.LittleEndian
	le.PutUint32(b[offMagic:], Magic)
	le.PutUint32(b[offSize:], 4096)
	le.PutUint16(b[offVersion:], 1)
	b[offCounterID] = CounterX86TSC
	b[offTimeType] = TimeUTC
	le.PutUint32(b[offSeqCount:], 8)
	le.PutUint64(b[offDisruptionMarker:], 0x1122334455667788)
	le.PutUint64(b[offFlags:], uint64(FlagTimeMaxErrorValid|FlagTimeEstErrorValid|FlagPeriodMaxErrorValid|FlagDisruptionSoon|FlagTAIOffsetValid|FlagVMGenCounterPresent))
	b[offClockStatus] = byte(StatusSynchronized)
	le.PutUint16(b[offTAIOffset:], 37)
	b[offLeapIndicator] = byte(LeapPrePos)
	b[offPeriodShift] = 4
	le.PutUint64(b[offCounterValue:], 123456789)
	le.PutUint64(b[offPeriod:], 1<<40)
	le.PutUint64(b[offPeriodMaxError:], 1<<20)
	le.PutUint64(b[offTimeSec:], 1_800_000_000)
	le.PutUint64(b[offTimeFrac:], 1<<63) // half a second
	le.PutUint64(b[offTimeEstError:], 2_000)
	le.PutUint64(b[offTimeMaxError:], 50_000)
	le.PutUint64(b[offVMGeneration:], 7)
	return b
}

func TestDecodeAFullPage(t *testing.T) {
	t.Parallel()
	p, err := Decode(page())
	if err != nil {
		t.Fatal(err)
	}
	if !p.HasTime() || !p.Time().Equal(time.Unix(1_800_000_000, 500_000_000)) {
		t.Errorf("Time() = %v (HasTime %v), want 1800000000.5 s", p.Time(), p.HasTime())
	}
	if d, ok := p.MaxError(); !ok || d != 50*time.Microsecond {
		t.Errorf("MaxError() = %v, %v; want 50µs, true", d, ok)
	}
	if d, ok := p.EstError(); !ok || d != 2*time.Microsecond {
		t.Errorf("EstError() = %v, %v; want 2µs, true", d, ok)
	}
	if r, ok := p.PeriodMaxErrorRatio(); !ok || r != 1.0/(1<<20) {
		t.Errorf("PeriodMaxErrorRatio() = %v, %v; want 2^-20, true", r, ok)
	}
	if _, ok := p.PeriodEstErrorRatio(); ok {
		t.Error("PeriodEstErrorRatio() valid without its flag")
	}
	if p.VMGeneration != 7 || p.TAIOffset != 37 || p.LeapIndicator != LeapPrePos || p.DisruptionMarker != 0x1122334455667788 {
		t.Errorf("Decode() = %+v", p)
	}
	// Without the generation counter's flag, or in a short page, the
	// counter is not read.
	b := page()
	binary.LittleEndian.PutUint64(b[offFlags:], 0)
	if p, err := Decode(b); err != nil || p.VMGeneration != 0 {
		t.Errorf("without FlagVMGenCounterPresent: VMGeneration %d, %v", p.VMGeneration, err)
	}
	if p, err := Decode(page()[:MinSize]); err != nil || p.VMGeneration != 0 {
		t.Errorf("a page of %d bytes: VMGeneration %d, %v", MinSize, p.VMGeneration, err)
	}
}

func TestDecodeRejects(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name   string
		modify func([]byte) []byte
		want   error
		text   string
	}{
		{"short", func(b []byte) []byte { return b[:MinSize-1] }, ErrNotVMClock, "103 bytes, want at least 104"},
		{"bad magic", func(b []byte) []byte { copy(b, "KLCV"); return b }, ErrNotVMClock, `magic 0x56434c4b, want 0x4b4c4356 ("VCLK")`},
		{"version 2", func(b []byte) []byte { b[offVersion] = 2; return b }, ErrVersion, "version 2, this reader reads 1"},
		{"size 16", func(b []byte) []byte { binary.LittleEndian.PutUint32(b[offSize:], 16); return b }, ErrNotVMClock, "size 16"},
		{"odd seq_count", func(b []byte) []byte { b[offSeqCount] = 9; return b }, ErrMalformed, "seq_count 9 is odd"},
		{"status 5", func(b []byte) []byte { b[offClockStatus] = 5; return b }, ErrMalformed, "clock_status 5"},
		{"leap 6", func(b []byte) []byte { b[offLeapIndicator] = 6; return b }, ErrMalformed, "leap_indicator 6"},
		{"smeared time", func(b []byte) []byte { b[offTimeType] = 3; return b }, ErrMalformed, "time_type 3 (smeared)"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			_, err := Decode(tc.modify(page()))
			if !errors.Is(err, tc.want) {
				t.Fatalf("Decode() error = %v, want %v", err, tc.want)
			}
			if !strings.Contains(err.Error(), tc.text) {
				t.Errorf("Decode() error %q does not say %q", err, tc.text)
			}
		})
	}
}

func TestStrings(t *testing.T) {
	t.Parallel()
	var got []string
	for _, s := range Statuses() {
		got = append(got, s.String())
	}
	got = append(got, ClockStatus(9).String(), LeapPostNeg.String(), Leap(8).String())
	want := []string{"unknown", "initializing", "synchronized", "free_running", "unreliable", "invalid(9)", "post_negative", "invalid(8)"}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("(-want +got):\n%s", diff)
	}
}
