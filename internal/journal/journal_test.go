package journal

import (
	"bytes"
	"flag"
	"log/slog"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/clockwatch/clockwatch/internal/kernel"
	"github.com/clockwatch/clockwatch/internal/step"
)

var update = flag.Bool("update", false, "rewrite the golden files in testdata/")

func bootID(id string) func() (string, error) { return func() (string, error) { return id, nil } }

func event(seq, epoch uint64, stepBy time.Duration) step.Event {
	wall := time.Date(2026, 11, 30, 3, 12, 0, 0, time.UTC).Add(time.Duration(seq) * time.Minute)
	return step.Event{
		Type: step.TypeStep, Seq: seq, Epoch: epoch, Step: stepBy, Seen: step.SeenBoth,
		Delay: 42 * time.Microsecond, Mono: int64(seq) * 1e9, WallBefore: wall.Add(-stepBy), WallAfter: wall,
		Uncertainty: 4 * time.Microsecond,
	}
}

func cfg(dir string) Config { return Config{Dir: dir, MaxBytes: 1 << 20} }

func TestAppendReadAndEpochAcrossRestarts(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	j := Open(cfg(dir), Options{BootID: bootID("boot-a")})
	if !j.Persistent() {
		t.Fatalf("fresh journal not persistent: %v", j.Err())
	}
	if got := j.State(); got != (step.State{}) {
		t.Errorf("fresh State() = %+v, want zero", got)
	}
	want := []Record{{"boot-a", event(1, 1, -12400*time.Millisecond)}, {"boot-a", event(2, 2, time.Hour)}}
	for _, r := range want {
		if err := j.Append(r.Event); err != nil {
			t.Fatal(err)
		}
	}
	j.Close()

	got, warnings, err := Read(dir, time.Time{})
	if err != nil || len(warnings) > 0 {
		t.Fatalf("Read() warnings %v, err %v", warnings, err)
	}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("Read() (-want +got):\n%s", diff)
	}
	since, _, _ := Read(dir, want[1].Event.WallAfter)
	if diff := cmp.Diff(want[1:], since); diff != "" {
		t.Errorf("Read(since) (-want +got):\n%s", diff)
	}

	// Restart in the same boot: the state goes on.
	j = Open(cfg(dir), Options{BootID: bootID("boot-a")})
	if got := j.State(); got != (step.State{Epoch: 2, Seq: 2}) {
		t.Errorf("after restart State() = %+v, want epoch 2 seq 2", got)
	}
	j.Close()
	// After a reboot the epoch moves on by one: nobody watched the clock.
	j = Open(cfg(dir), Options{BootID: bootID("boot-b")})
	if got := j.State(); got != (step.State{Epoch: 3, Seq: 2}) {
		t.Errorf("after reboot State() = %+v, want epoch 3 seq 2", got)
	}
	j.Close()
	j = Open(cfg(dir), Options{BootID: bootID("boot-b")})
	if got := j.State(); got != (step.State{Epoch: 3, Seq: 2}) {
		t.Errorf("after restart in the new boot State() = %+v, want epoch 3 seq 2", got)
	}
	j.Close()
}

func TestBaselineGap(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	j := Open(cfg(dir), Options{BootID: bootID("a")})
	j.SaveBaseline(kernel.Sample{Mono: 5e9, Boot: 6e9, Real: 1_790_000_000e9}, step.State{})
	j.Close()
	j = Open(cfg(dir), Options{BootID: bootID("a")})
	if got, want := j.State(), (step.State{Gap: 1_790_000_000e9 - 6e9, GapBoot: 6e9}); got != want {
		t.Errorf("same boot: State() = %+v, want %+v", got, want)
	}
	// An event moves the baseline to its own gap.
	e := event(1, 1, time.Second)
	e.Boot = 7e9
	_ = j.Append(e)
	if got := j.State(); got.Gap != e.WallAfter.UnixNano()-7e9 || got.GapBoot != 7e9 {
		t.Errorf("after an event State() = %+v, want its gap", got)
	}
	j.Close()
	// State lost: the gap comes back from the last event.
	os.Remove(filepath.Join(dir, StateFile))
	j = Open(cfg(dir), Options{BootID: bootID("a")})
	if got := j.State(); got.GapBoot != 7e9 {
		t.Errorf("recovered State() = %+v, want the last event's gap", got)
	}
	j.Close()
	// Another boot: BOOTTIME restarted, the gap means nothing.
	j = Open(cfg(dir), Options{BootID: bootID("b")})
	if got := j.State(); got.Gap != 0 || got.GapBoot != 0 || got.Epoch != 2 {
		t.Errorf("new boot: State() = %+v, want no gap and epoch 2", got)
	}
	j.Close()
}

func TestEpochSurvivesLostOrCorruptState(t *testing.T) {
	t.Parallel()
	for _, name := range []string{"lost", "corrupt"} {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			dir := t.TempDir()
			j := Open(cfg(dir), Options{BootID: bootID("b")})
			for i := uint64(1); i <= 3; i++ {
				_ = j.Append(event(i, i+10, time.Second))
			}
			j.Close()
			path := filepath.Join(dir, StateFile)
			if name == "lost" {
				os.Remove(path)
			} else {
				os.WriteFile(path, []byte(`{"epoch":1,`), 0o640)
			}
			j = Open(cfg(dir), Options{BootID: bootID("b")})
			defer j.Close()
			if got := j.State(); got != (step.State{Epoch: 13, Seq: 3}) {
				t.Errorf("State() = %+v, want epoch 13 seq 3 from the journal", got)
			}
		})
	}
}

func TestTornLastLine(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	j := Open(cfg(dir), Options{BootID: bootID("b")})
	_ = j.Append(event(1, 1, time.Second))
	j.Close()
	path := filepath.Join(dir, EventsFile)
	f, _ := os.OpenFile(path, os.O_APPEND|os.O_WRONLY, 0)
	f.WriteString(`{"boot_id":"b","type":"step","seq":2,"ep`)
	f.Close()

	recs, warnings, err := Read(dir, time.Time{})
	if err != nil || len(recs) != 1 {
		t.Fatalf("Read() = %d records, err %v; want 1 and no error", len(recs), err)
	}
	if len(warnings) != 1 || !strings.Contains(warnings[0], "line 2: torn last line skipped") {
		t.Errorf("warnings = %q, want one about the torn line 2", warnings)
	}

	// Reopening cuts the torn tail, so the next event starts a clean line.
	var logs bytes.Buffer
	j = Open(cfg(dir), Options{BootID: bootID("b"), Logger: slog.New(slog.NewTextHandler(&logs, nil))})
	if err := j.Append(event(2, 2, -time.Second)); err != nil {
		t.Fatal(err)
	}
	j.Close()
	if !strings.Contains(logs.String(), "torn line") {
		t.Errorf("no warning logged about the torn line: %s", logs.String())
	}
	recs, warnings, err = Read(dir, time.Time{})
	if err != nil || len(warnings) != 0 || len(recs) != 2 {
		t.Errorf("after repair Read() = %d records, warnings %q, err %v; want 2 clean", len(recs), warnings, err)
	}
}

func TestCorruptMiddleLineIsSkipped(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	line := func(e step.Event) string { return string(appendLine(nil, "b", e)) }
	content := line(event(1, 1, time.Second)) + "garbage\n" + `{"type":"step"}` + "\n" + line(event(2, 2, time.Second))
	os.WriteFile(filepath.Join(dir, EventsFile), []byte(content), 0o640)
	recs, warnings, err := Read(dir, time.Time{})
	if err != nil || len(recs) != 2 || len(warnings) != 2 {
		t.Errorf("Read() = %d records, warnings %q, err %v; want 2 records, 2 warnings", len(recs), warnings, err)
	}
}

func TestRotation(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	c := Config{Dir: dir, MaxBytes: 4096}
	j := Open(c, Options{BootID: bootID("b")})
	const n = 40 // about 400 bytes each: rotates a few times
	for i := uint64(1); i <= n; i++ {
		if err := j.Append(event(i, i, time.Second)); err != nil {
			t.Fatal(err)
		}
	}
	j.Close()
	for _, name := range []string{EventsFile, RotatedFile} {
		st, err := os.Stat(filepath.Join(dir, name))
		if err != nil {
			t.Fatal(err)
		}
		if st.Size() > c.MaxBytes {
			t.Errorf("%s is %d bytes, over %d", name, st.Size(), c.MaxBytes)
		}
	}
	recs, warnings, err := Read(dir, time.Time{})
	if err != nil || len(warnings) > 0 || len(recs) == 0 {
		t.Fatalf("Read() = %d records, warnings %q, err %v", len(recs), warnings, err)
	}
	for i, r := range recs[1:] {
		if r.Event.Seq != recs[i].Event.Seq+1 {
			t.Fatalf("records out of order at %d: seq %d after %d", i+1, r.Event.Seq, recs[i].Event.Seq)
		}
	}
	if last := recs[len(recs)-1].Event.Seq; last != n {
		t.Errorf("last seq = %d, want %d", last, n)
	}
}

func TestUnwritableStateDirectory(t *testing.T) {
	t.Parallel()
	base := t.TempDir()
	blocker := filepath.Join(base, "file")
	os.WriteFile(blocker, nil, 0o640)
	dir := filepath.Join(blocker, "state") // below a regular file: never creatable, even as root
	var logs bytes.Buffer
	j := Open(cfg(dir), Options{BootID: bootID("b"), Logger: slog.New(slog.NewTextHandler(&logs, nil))})
	if j.Persistent() || j.Err() == nil {
		t.Fatalf("Persistent() = %v, Err() = %v; want false and an error", j.Persistent(), j.Err())
	}
	if !strings.Contains(logs.String(), "Running without persistence") {
		t.Errorf("log does not say it runs without persistence: %s", logs.String())
	}
	// Events still move the in-memory state on; the error is logged once.
	if err := j.Append(event(1, 5, time.Second)); err == nil {
		t.Error("Append() to an unwritable directory succeeded")
	}
	if got := j.State(); got != (step.State{Epoch: 5, Seq: 1}) {
		t.Errorf("State() = %+v, want epoch 5 seq 1", got)
	}
	if n := strings.Count(logs.String(), "Running without persistence"); n != 1 {
		t.Errorf("logged %d times, want once", n)
	}
	// Once the directory can be created, persistence comes back.
	os.Remove(blocker)
	os.Mkdir(blocker, 0o750)
	if err := j.Append(event(2, 6, time.Second)); err != nil {
		t.Fatalf("Append() after the directory became writable: %v", err)
	}
	if !j.Persistent() {
		t.Error("Persistent() = false after a successful append")
	}
	j.Close()
}

// TestRunRetriesWhileFailing: Run retries a failed journal by itself, with
// no event to append, within RetryInterval of the directory becoming
// writable. (While persisting it arms no timer: TestIdleWakeups in
// internal/daemon counts the idle daemon's timers.)
func TestRunRetriesWhileFailing(t *testing.T) {
	t.Parallel()
	base := t.TempDir()
	blocker := filepath.Join(base, "file")
	os.WriteFile(blocker, nil, 0o640)
	j := Open(cfg(filepath.Join(blocker, "state")), Options{BootID: bootID("b")})
	if j.Persistent() {
		t.Fatal("Persistent() below a regular file")
	}
	events := make(chan step.Event)
	done := make(chan error)
	go func() { done <- j.Run(t.Context(), events, nil) }()
	defer func() {
		close(events)
		<-done
	}()
	os.Remove(blocker)
	os.Mkdir(blocker, 0o750)
	deadline := time.Now().Add(RetryInterval + 5*time.Second)
	for !j.Persistent() {
		if time.Now().After(deadline) {
			t.Fatalf("not persisting %s after the directory became writable: %v", RetryInterval+5*time.Second, j.Err())
		}
		time.Sleep(50 * time.Millisecond)
	}
}

func TestResolve(t *testing.T) {
	t.Parallel()
	env := func(v string) func(string) string {
		return func(k string) string {
			if k == "STATE_DIRECTORY" {
				return v
			}
			return ""
		}
	}
	for _, tc := range []struct{ dir, env, want string }{
		{"", "", DefaultDir},
		{"", "/var/lib/clockwatch:/var/lib/other", "/var/lib/clockwatch"},
		{"", "/run/x", "/run/x"},
		{"/srv/cw", "/run/x", "/srv/cw"},
	} {
		if got := (Config{Dir: tc.dir}).Resolve(env(tc.env)).Dir; got != tc.want {
			t.Errorf("Resolve(dir %q, STATE_DIRECTORY %q) = %q, want %q", tc.dir, tc.env, got, tc.want)
		}
	}
}

func TestReadMissingDirectory(t *testing.T) {
	t.Parallel()
	recs, warnings, err := Read(filepath.Join(t.TempDir(), "none"), time.Time{})
	if err != nil || len(recs) != 0 || len(warnings) != 0 {
		t.Errorf("Read(missing) = %v, %v, %v; want nothing", recs, warnings, err)
	}
}

func TestRunAppendsUntilClosed(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	j := Open(cfg(dir), Options{BootID: bootID("b")})
	ch := make(chan step.Event, 2)
	ch <- event(1, 1, time.Second)
	ch <- event(2, 2, time.Second)
	close(ch)
	if err := j.Run(t.Context(), ch, nil); err != nil {
		t.Fatal(err)
	}
	recs, _, _ := Read(dir, time.Time{})
	if len(recs) != 2 {
		t.Errorf("Run appended %d records, want 2", len(recs))
	}
}

func TestPrintGolden(t *testing.T) {
	t.Parallel()
	recs := []Record{
		{"boot-a", event(1, 1, -12400*time.Millisecond)},
		{"boot-a", func() step.Event { e := event(2, 2, -time.Second); e.Leap = true; return e }()},
		{"boot-a", step.Event{Type: step.TypeWake, Seq: 3, Epoch: 2, Seen: step.SeenBoth, Suspended: 8 * time.Hour,
			WallAfter: time.Date(2026, 11, 30, 12, 0, 0, 0, time.UTC), WallBefore: time.Date(2026, 11, 30, 12, 0, 0, 0, time.UTC)}},
		{"boot-b", step.Event{Type: step.TypeClockSet, Seq: 4, Epoch: 3, Seen: step.SeenClockSet, Step: 3 * time.Microsecond, Delay: 40 * time.Microsecond,
			WallAfter: time.Date(2026, 11, 30, 13, 0, 0, 0, time.UTC), WallBefore: time.Date(2026, 11, 30, 13, 0, 0, 0, time.UTC)}},
		{"boot-b", event(5, 4, 3600*time.Second)},
	}
	for _, tc := range []struct {
		golden string
		json   bool
	}{{"print.txt", false}, {"print.jsonl", true}} {
		var buf bytes.Buffer
		if err := Print(&buf, recs, tc.json); err != nil {
			t.Fatal(err)
		}
		path := filepath.Join("testdata", tc.golden)
		if *update {
			os.MkdirAll("testdata", 0o755)
			os.WriteFile(path, buf.Bytes(), 0o644)
		}
		want, err := os.ReadFile(path)
		if err != nil {
			t.Fatalf("%v (run with -update)", err)
		}
		if diff := cmp.Diff(string(want), buf.String()); diff != "" {
			t.Errorf("%s (-want +got):\n%s", path, diff)
		}
		if tc.json {
			// The JSON output reads back as the same records.
			dir := t.TempDir()
			os.WriteFile(filepath.Join(dir, EventsFile), buf.Bytes(), 0o640)
			back, warnings, err := Read(dir, time.Time{})
			if err != nil || len(warnings) > 0 {
				t.Fatalf("reading printed JSON: %v %v", warnings, err)
			}
			if diff := cmp.Diff(recs, back); diff != "" {
				t.Errorf("printed JSON read back (-want +got):\n%s", diff)
			}
		}
	}
}

func TestValidate(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		c    Config
		want string
	}{
		{DefaultConfig(), ""},
		{Config{MaxBytes: 1 << 20}, ""},
		{Config{Dir: "var/lib", MaxBytes: 1 << 20}, `journal.dir: must be an absolute path, got "var/lib"`},
		{Config{Dir: "/x", MaxBytes: 10}, "journal.max_bytes: must be between 4096 and 268435456 (256 MiB; the journal is read whole at start), got 10"},
	} {
		err := tc.c.Validate()
		got := ""
		if err != nil {
			got = err.Error()
		}
		if got != tc.want {
			t.Errorf("Validate(%+v) = %q, want %q", tc.c, got, tc.want)
		}
	}
}

// BenchmarkAppend is the cost of one event made durable: the journal line
// fsync'd, then state.json replaced (fsync, rename, directory fsync). The
// announcer hears an event only after this (docs/step-detection.md).
func BenchmarkAppend(b *testing.B) {
	j := Open(cfg(b.TempDir()), Options{BootID: bootID("a")})
	defer j.Close()
	b.ResetTimer()
	for i := range b.N {
		if err := j.Append(event(uint64(i+1), uint64(i+1), time.Second)); err != nil {
			b.Fatal(err)
		}
	}
}

// BenchmarkAppendUntilDurable is what the announcer waits for: the
// time from an event to its line fsync'd (AppendThen's callback), reported
// as durable-ns/op beside the whole Append.
func BenchmarkAppendUntilDurable(b *testing.B) {
	j := Open(cfg(b.TempDir()), Options{BootID: bootID("a")})
	defer j.Close()
	var wait time.Duration
	b.ResetTimer()
	for i := range b.N {
		began := time.Now()
		if err := j.AppendThen(event(uint64(i+1), uint64(i+1), time.Second), func(step.Event) { wait += time.Since(began) }); err != nil {
			b.Fatal(err)
		}
	}
	b.ReportMetric(float64(wait.Nanoseconds())/float64(b.N), "durable-ns/op")
}
