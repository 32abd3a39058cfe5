package trace

import (
	"bytes"
	"context"
	"flag"
	"io"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/clockwatch/clockwatch/internal/hostclock"
	"github.com/clockwatch/clockwatch/internal/kernel"
	"github.com/clockwatch/clockwatch/internal/step"
)

var (
	update   = flag.Bool("update", false, "rewrite the golden replay outputs in testdata/")
	generate = flag.Bool("generate", false, "rewrite the synthesised scenario traces in testdata/")
	record   = flag.Bool("record", false, "record testdata/recorded-steady.trace.jsonl from this machine's clocks (2 s)")
)

// TestReplayGolden replays every trace in testdata/ and compares the events
// with its golden file.
func TestReplayGolden(t *testing.T) {
	t.Parallel()
	traces, err := filepath.Glob("testdata/*.trace.jsonl")
	if err != nil || len(traces) == 0 {
		t.Fatalf("no traces in testdata/: %v", err)
	}
	for _, path := range traces {
		name := strings.TrimSuffix(filepath.Base(path), ".trace.jsonl")
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			f, err := os.Open(path)
			if err != nil {
				t.Fatal(err)
			}
			defer f.Close()
			var out bytes.Buffer
			if _, err := Replay(f, step.DefaultConfig(), &out); err != nil {
				t.Fatalf("Replay(%s) = %v", path, err)
			}
			golden := filepath.Join("testdata", name+".events.jsonl")
			if *update {
				if err := os.WriteFile(golden, out.Bytes(), 0o644); err != nil {
					t.Fatal(err)
				}
			}
			want, err := os.ReadFile(golden)
			if err != nil {
				t.Fatalf("%v (run with -update to create it)", err)
			}
			if diff := cmp.Diff(string(want), out.String()); diff != "" {
				t.Errorf("replay of %s (-want +got):\n%s", path, diff)
			}
		})
	}
}

func TestReplayStopsAtBadLine(t *testing.T) {
	t.Parallel()
	in := `{"mono_ns":100000000,"boot_ns":100000000,"real_ns":1790000000000000000}
{"mono_ns":200000000,"boot_ns":200000000,"real_ns":1789999987600000000}
{"mono_ns":300000000,"bogus":1}
`
	var out bytes.Buffer
	_, err := Replay(strings.NewReader(in), step.DefaultConfig(), &out)
	if err == nil || err.Error() != `trace line 3: not valid JSON: json: unknown field "bogus"` {
		t.Errorf("Replay() = %v, want the line 3 error", err)
	}
	want := `{"type":"step","seq":1,"epoch":1,"step_seconds":-12.5,"seen":"sampling","delay_seconds":0.1,"mono_ns":200000000,"boot_ns":200000000,"wall_before":"2026-09-21T14:13:20.1Z","wall_after":"2026-09-21T14:13:07.6Z","uncertainty_seconds":0}` + "\n"
	if diff := cmp.Diff(want, out.String()); diff != "" {
		t.Errorf("events before the bad line (-want +got):\n%s", diff)
	}
}

func TestReplayRejectsBadConfig(t *testing.T) {
	t.Parallel()
	cfg := step.DefaultConfig()
	cfg.Interval = 0
	if _, err := Replay(strings.NewReader(""), cfg, &bytes.Buffer{}); err == nil {
		t.Error("Replay with interval 0 succeeded")
	}
}

// scenario builds a synthetic trace the way the kernel clocks would move.
type scenario struct {
	w                               *Writer
	mono, susp, gap, taiOff, window int64
	rate                            float64
}

func newScenario(w *Writer) *scenario {
	return &scenario{
		w:      w,
		mono:   int64(4711 * time.Second),
		gap:    int64(1_790_000_000*time.Second) + 123456789,
		taiOff: int64(37 * time.Second),
		window: 1800,
	}
}

func (s *scenario) sample() {
	boot := s.mono + s.susp
	real := boot + s.gap
	_ = s.w.Sample(kernel.Sample{Mono: s.mono, Boot: boot, Real: real, Raw: s.mono - s.mono/100000, TAI: real + s.taiOff, Window: s.window})
}

func (s *scenario) ticks(n int, d time.Duration) {
	for range n {
		s.mono += int64(d)
		s.gap += int64(s.rate * float64(d))
		s.sample()
	}
}

// set steps the clock and delivers the mark and the fresh sample the
// sampler takes, after a wake-up latency.
func (s *scenario) set(by time.Duration, latency time.Duration) {
	s.mono += int64(30 * time.Millisecond)
	s.gap += int64(by)
	s.mono += int64(latency)
	_ = s.w.ClockSet(s.mono)
	s.mono += int64(40 * time.Microsecond)
	s.sample()
}

var scenarios = map[string]func(s *scenario){
	"chrony-step-back-12.4s": func(s *scenario) {
		s.ticks(20, 100*time.Millisecond)
		s.set(-12400*time.Millisecond, 15*time.Microsecond)
		s.ticks(20, 100*time.Millisecond)
	},
	"date-forward-1h": func(s *scenario) {
		s.ticks(10, 100*time.Millisecond)
		s.set(time.Hour, 30*time.Microsecond)
		s.ticks(10, 100*time.Millisecond)
	},
	"sampling-only-steps-1ms": func(s *scenario) {
		s.ticks(10, 100*time.Millisecond)
		s.gap -= int64(time.Millisecond)
		s.ticks(10, 100*time.Millisecond)
		s.gap += int64(time.Millisecond)
		s.ticks(10, 100*time.Millisecond)
	},
	"suspend-resume": func(s *scenario) {
		s.ticks(10, 100*time.Millisecond)
		s.susp += int64(8 * time.Hour)
		s.set(0, 2*time.Millisecond)
		s.ticks(10, 100*time.Millisecond)
	},
	"leap-second-insert": func(s *scenario) {
		s.ticks(10, 100*time.Millisecond)
		s.taiOff += int64(time.Second)
		s.set(-time.Second, 20*time.Microsecond)
		s.ticks(10, 100*time.Millisecond)
	},
	"steps-in-a-row": func(s *scenario) {
		s.ticks(5, 100*time.Millisecond)
		s.set(-250*time.Millisecond, 10*time.Microsecond)
		s.set(3600*time.Second, 10*time.Microsecond)
		s.ticks(1, 100*time.Millisecond)
		s.set(-12400*time.Millisecond, 10*time.Microsecond)
		s.ticks(5, 100*time.Millisecond)
	},
	"long-pause-slew": func(s *scenario) {
		s.rate = 300e-6
		s.ticks(10, 100*time.Millisecond)
		s.ticks(1, 45*time.Second)
		s.ticks(10, 100*time.Millisecond)
		s.gap += int64(2 * time.Second)
		s.ticks(1, 20*time.Second)
		s.ticks(5, 100*time.Millisecond)
	},
	"clock-set-no-change": func(s *scenario) {
		s.ticks(5, 100*time.Millisecond)
		s.set(0, 10*time.Microsecond)
		s.ticks(5, 100*time.Millisecond)
	},
}

func TestGenerateScenarios(t *testing.T) {
	if !*generate {
		t.Skip("run with -generate to rewrite the synthesised traces")
	}
	for name, build := range scenarios {
		var buf bytes.Buffer
		s := newScenario(NewWriter(&buf))
		s.sample()
		build(s)
		if err := os.WriteFile(filepath.Join("testdata", name+".trace.jsonl"), buf.Bytes(), 0o644); err != nil {
			t.Fatal(err)
		}
	}
}

func TestRecordSteadyTrace(t *testing.T) {
	if !*record {
		t.Skip("run with -record to record a steady trace of this machine")
	}
	w := hostclock.NewClockSetWatcher()
	ctx, cancel := context.WithTimeout(t.Context(), 2*time.Second)
	defer cancel()
	go func() { _ = w.Run(ctx) }()
	<-w.Ready()
	var buf bytes.Buffer
	if _, err := Record(ctx, hostclock.SysClocks{}, w.Marks(), 100*time.Millisecond, &buf); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile("testdata/recorded-steady.trace.jsonl", buf.Bytes(), 0o644); err != nil {
		t.Fatal(err)
	}
}

// FuzzReplay feeds arbitrary traces through the detector: it must never
// panic, whatever the clock values.
func FuzzReplay(f *testing.F) {
	for _, name := range []string{"steps-in-a-row", "suspend-resume", "leap-second-insert"} {
		b, err := os.ReadFile(filepath.Join("testdata", name+".trace.jsonl"))
		if err != nil {
			f.Fatal(err)
		}
		f.Add(b)
	}
	f.Add([]byte(`{"mono_ns":1,"boot_ns":-9223372036854775808,"real_ns":9223372036854775807,"tai_ns":1,"window_ns":9223372036854775807}
{"mono_ns":0,"clock_set":true}
{"mono_ns":9223372036854775807,"boot_ns":9223372036854775807,"real_ns":-9223372036854775808,"tai_ns":-1}`))
	f.Fuzz(func(t *testing.T, data []byte) {
		_, _ = Replay(bytes.NewReader(data), step.DefaultConfig(), io.Discard)
	})
}
