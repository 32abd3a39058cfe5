package journal

import (
	"bytes"
	"os"
	"path/filepath"
	"runtime"
	"strings"
	"testing"
	"time"
)

// The corrupt-file table: state directories as a crash, a full disk, an
// editor or an attacker may leave them. Open must never crash, never give an
// epoch below the largest valid one on disk, and refuse values no run writes.
func TestCorruptStateDirectory(t *testing.T) {
	t.Parallel()
	line := func(boot string, seq, epoch uint64) string {
		e := event(seq, epoch, time.Second)
		e.Boot = int64(seq) * 1e9
		return string(appendLine(nil, boot, e))
	}
	three := line("a", 1, 1) + line("a", 2, 2) + line("a", 3, 3)
	for _, tt := range []struct {
		name          string
		state, events string
		rotated       string
		boot          string
		// wantEpoch is the epoch Open must give; wantRecords how many
		// events Read returns after it.
		wantEpoch   uint64
		wantRecords int
		wantNoGap   bool
	}{
		{name: "missing state", events: three, boot: "a", wantEpoch: 3, wantRecords: 3},
		{name: "empty state", state: "", events: three, boot: "a", wantEpoch: 3, wantRecords: 3},
		{name: "garbage state", state: "\x00\x01garbage", events: three, boot: "a", wantEpoch: 3, wantRecords: 3},
		{name: "state epoch wraps on a new boot", state: `{"epoch":18446744073709551615,"seq":3,"boot_id":"a"}`,
			events: three, boot: "b", wantEpoch: 4, wantRecords: 3},
		{name: "state seq past 2^53", state: `{"epoch":3,"seq":18446744073709551615,"boot_id":"a"}`,
			events: three, boot: "a", wantEpoch: 3, wantRecords: 3},
		{name: "state gap before 1970", state: `{"epoch":3,"seq":3,"boot_id":"a","gap_ns":-9223372036854775808,"gap_boot_ns":1000000000}`,
			boot: "a", wantEpoch: 3, wantNoGap: true},
		{name: "state gap past 2262", state: `{"epoch":3,"seq":3,"boot_id":"a","gap_ns":9223372036854775807,"gap_boot_ns":1000000000}`,
			boot: "a", wantEpoch: 3, wantNoGap: true},
		{name: "state negative boottime", state: `{"epoch":3,"seq":3,"boot_id":"a","gap_ns":1,"gap_boot_ns":-5}`,
			boot: "a", wantEpoch: 3, wantNoGap: true},
		{name: "last record lacks only its newline", events: strings.TrimSuffix(three, "\n"), boot: "a", wantEpoch: 3, wantRecords: 3},
		{name: "torn last record", events: three + line("a", 4, 4)[:100], boot: "a", wantEpoch: 3, wantRecords: 3},
		{name: "garbage middle line", events: line("a", 1, 1) + "{{{{\n" + line("a", 3, 3), boot: "a", wantEpoch: 3, wantRecords: 2},
		{name: "event with epoch past 2^53", events: three + strings.Replace(line("a", 4, 4), `"epoch":4`, `"epoch":18446744073709551615`, 1),
			boot: "a", wantEpoch: 3, wantRecords: 3},
		{name: "event with negative boot_ns", events: three + strings.Replace(line("a", 4, 4), `"boot_ns":4000000000`, `"boot_ns":-9223372036854775808`, 1),
			boot: "a", wantEpoch: 3, wantRecords: 3},
		{name: "event in 1677", events: three + strings.Replace(line("a", 4, 4), `"wall_before":"2026`, `"wall_before":"1677`, 1),
			boot: "a", wantEpoch: 3, wantRecords: 3},
		{name: "only the rotated file", rotated: three, boot: "a", wantEpoch: 3, wantRecords: 3},
		{name: "rotated garbage, current good", rotated: "\xff\xfe\n", events: three, boot: "a", wantEpoch: 3, wantRecords: 3},
		{name: "new boot, state lost", events: three, boot: "b", wantEpoch: 4, wantRecords: 3},
	} {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			dir := t.TempDir()
			write := func(name, content string) {
				if err := os.WriteFile(filepath.Join(dir, name), []byte(content), 0o640); err != nil {
					t.Fatal(err)
				}
			}
			if tt.state != "" || tt.name == "empty state" {
				write(StateFile, tt.state)
			}
			if tt.events != "" {
				write(EventsFile, tt.events)
			}
			if tt.rotated != "" {
				write(RotatedFile, tt.rotated)
			}
			j := Open(cfg(dir), Options{BootID: bootID(tt.boot)})
			st := j.State()
			j.Close()
			if st.Epoch != tt.wantEpoch {
				t.Errorf("epoch %d, want %d", st.Epoch, tt.wantEpoch)
			}
			if tt.wantNoGap && (st.Gap != 0 || st.GapBoot != 0) {
				t.Errorf("baseline gap %d at %d kept, want it refused", st.Gap, st.GapBoot)
			}
			recs, _, err := Read(dir, time.Time{})
			if err != nil || len(recs) != tt.wantRecords {
				t.Errorf("Read() = %d records, %v; want %d", len(recs), err, tt.wantRecords)
			}
			if b, err := os.ReadFile(filepath.Join(dir, EventsFile)); err == nil && len(b) > 0 && !bytes.HasSuffix(b, []byte("\n")) {
				t.Errorf("events.jsonl does not end in a newline after Open: %q", b[max(0, len(b)-40):])
			}
		})
	}
}

// A reboot's increment survives losing state.json: the boot after the next
// one must not repeat the epoch this one announced.
func TestBootIncrementSurvivesLostState(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	j := Open(cfg(dir), Options{BootID: bootID("a")})
	for i := uint64(1); i <= 3; i++ {
		if err := j.Append(event(i, i, time.Second)); err != nil {
			t.Fatal(err)
		}
	}
	j.Close()
	j = Open(cfg(dir), Options{BootID: bootID("b")})
	if got := j.State().Epoch; got != 4 {
		t.Fatalf("boot b: epoch %d, want 4", got)
	}
	j.Close()
	os.Remove(filepath.Join(dir, StateFile))
	j = Open(cfg(dir), Options{BootID: bootID("b")})
	if got := j.State().Epoch; got != 4 {
		t.Errorf("boot b, state.json lost: epoch %d, want 4 (this boot's increment is counted once)", got)
	}
	j.Close()
	os.Remove(filepath.Join(dir, StateFile))
	j = Open(cfg(dir), Options{BootID: bootID("c")})
	if got := j.State().Epoch; got != 5 {
		t.Errorf("boot c after state.json was lost in boot b: epoch %d, want 5 (4 was boot b's)", got)
	}
	j.Close()
}

// A journal line of any length costs Read at most a bounded buffer: a torn
// 16 MB line (the issue saw 500 MB) is skipped with a warning naming it.
//
// Not parallel: it measures the process's allocations.
func TestReadBoundsLineLength(t *testing.T) {
	dir := t.TempDir()
	good := string(appendLine(nil, "a", event(1, 1, time.Second)))
	huge := `{"boot_id":"a","x":"` + strings.Repeat("x", 16<<20) + "\"}\n"
	if err := os.WriteFile(filepath.Join(dir, EventsFile), []byte(good+huge+good), 0o640); err != nil {
		t.Fatal(err)
	}
	var before, after runtime.MemStats
	runtime.GC()
	runtime.ReadMemStats(&before)
	recs, warnings, err := Read(dir, time.Time{})
	runtime.ReadMemStats(&after)
	if err != nil || len(recs) != 2 {
		t.Fatalf("Read() = %d records, %v; want the 2 good ones", len(recs), err)
	}
	if len(warnings) != 1 || !strings.Contains(warnings[0], "line 2") {
		t.Errorf("warnings %q, want one naming line 2", warnings)
	}
	if alloc := after.TotalAlloc - before.TotalAlloc; alloc > 4<<20 {
		t.Errorf("Read allocated %d bytes for a 16 MiB line, want under 4 MiB", alloc)
	}
}
