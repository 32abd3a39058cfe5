package trace

import (
	"bytes"
	"context"
	"errors"
	"io"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/clockwatch/clockwatch/internal/hostclock"
	"github.com/clockwatch/clockwatch/internal/hostclock/hostclocktest"
	"github.com/clockwatch/clockwatch/internal/kernel"
)

func readAll(t testing.TB, r io.Reader) ([]Line, error) {
	t.Helper()
	tr := NewReader(r)
	var out []Line
	for {
		l, err := tr.Next()
		if errors.Is(err, io.EOF) {
			return out, nil
		}
		if err != nil {
			return out, err
		}
		out = append(out, l)
	}
}

func TestReaderErrors(t *testing.T) {
	t.Parallel()
	const ok = `{"mono_ns":100,"boot_ns":100,"real_ns":5}` + "\n"
	tests := []struct {
		name, in, want string
	}{
		{"not JSON", "hello\n", "trace line 1: not a JSON object"},
		{"broken JSON", ok + `{"mono_ns":1` + "\n", "trace line 2: not valid JSON: unexpected EOF"},
		{"unknown field", ok + `{"mono_ns":200,"boot_ns":1,"real_ns":1,"foo":1}`, `trace line 2: not valid JSON: json: unknown field "foo"`},
		{"missing mono_ns", `{"boot_ns":1,"real_ns":1}`, "trace line 1: missing mono_ns"},
		{"negative mono_ns", `{"mono_ns":-1,"boot_ns":1,"real_ns":1}`, "trace line 1: mono_ns must not be negative, got -1"},
		{"missing boot_ns", `{"mono_ns":1,"real_ns":1}`, "trace line 1: sample without boot_ns"},
		{"missing real_ns", `{"mono_ns":1,"boot_ns":1}`, "trace line 1: sample without real_ns"},
		{"string number", `{"mono_ns":"1","boot_ns":1,"real_ns":1}`, "trace line 1: not valid JSON: json: cannot unmarshal string into Go struct field lineJSON.mono_ns of type int64"},
		{"fractional number", `{"mono_ns":1.5,"boot_ns":1,"real_ns":1}`, "trace line 1: not valid JSON: json: cannot unmarshal number 1.5 into Go struct field lineJSON.mono_ns of type int64"},
		{"two values", `{"mono_ns":1,"boot_ns":1,"real_ns":1} {}`, "trace line 1: more than one JSON value on the line"},
		{"sample going back", ok + "\n" + `{"mono_ns":99,"boot_ns":1,"real_ns":1}`, "trace line 3: non-monotonic mono_ns: sample at 99 is not after the previous sample's 100"},
		{"sample repeated", ok + ok, "trace line 2: non-monotonic mono_ns: sample at 100 is not after the previous sample's 100"},
		{"mark going back", `{"mono_ns":100,"clock_set":true}` + "\n" + `{"mono_ns":50,"clock_set":true}`, "trace line 2: non-monotonic mono_ns: clock_set mark at 50 is before the previous mark's 100"},
		{"clock_set false", `{"mono_ns":100,"clock_set":false}`, "trace line 1: clock_set must be true when present (a sample has no clock_set member)"},
		{"mark with sample fields", `{"mono_ns":100,"clock_set":true,"real_ns":1}`, "trace line 1: a clock_set mark has only mono_ns"},
		{"negative window", `{"mono_ns":1,"boot_ns":1,"real_ns":1,"window_ns":-3}`, "trace line 1: window_ns must not be negative, got -3"},
		{"window past an hour", `{"mono_ns":1,"boot_ns":1,"real_ns":1,"window_ns":9223372036854775807}`,
			"trace line 1: window_ns 9223372036854775807 is over 3600000000000 (an hour): no clock read takes that long"},
		{"real before 1970", `{"mono_ns":1,"boot_ns":1,"real_ns":-9223372036854775808}`,
			"trace line 1: real_ns -9223372036854775808 is outside 0..2^62 (1970 to 2116): no kernel reads that"},
		{"negative boot", `{"mono_ns":1,"boot_ns":-1,"real_ns":1}`, "trace line 1: boot_ns -1 is outside 0..2^62: no kernel reads that"},
		{"mono past 2^62", `{"mono_ns":9223372036854775807,"boot_ns":1,"real_ns":1}`,
			"trace line 1: mono_ns 9223372036854775807 is over 4611686018427387904 (2^62, 146 years): no kernel reads that"},
		{"negative tai", `{"mono_ns":1,"boot_ns":1,"real_ns":1,"tai_ns":-1}`, "trace line 1: tai_ns -1 is outside 0..2^62: no kernel reads that"},
		{"too long", ok + strings.Repeat(" ", MaxLineBytes+1), "trace line 2: longer than 65536 bytes"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			_, err := readAll(t, strings.NewReader(tc.in))
			if err == nil {
				t.Fatalf("no error, want %q", tc.want)
			}
			if got := err.Error(); got != tc.want {
				t.Errorf("error = %q, want %q", got, tc.want)
			}
			var le *LineError
			if !errors.As(err, &le) {
				t.Errorf("error %T is not a *LineError", err)
			}
		})
	}
}

func TestReaderAcceptsMarksBeforeTheirSampleAndBlankLines(t *testing.T) {
	t.Parallel()
	in := `{"mono_ns":100,"boot_ns":110,"real_ns":5,"raw_ns":90,"tai_ns":42,"window_ns":3}

{"mono_ns":95,"clock_set":true}
{"mono_ns":200,"boot_ns":210,"real_ns":6}
`
	got, err := readAll(t, strings.NewReader(in))
	if err != nil {
		t.Fatal(err)
	}
	want := []Line{
		{Sample: kernel.Sample{Mono: 100, Boot: 110, Real: 5, Raw: 90, TAI: 42, Window: 3}},
		{Sample: kernel.Sample{Mono: 95}, ClockSet: true},
		{Sample: kernel.Sample{Mono: 200, Boot: 210, Real: 6}},
	}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("lines (-want +got):\n%s", diff)
	}
}

func TestWriterRoundTrip(t *testing.T) {
	t.Parallel()
	want := []Line{
		{Sample: kernel.Sample{Mono: 1, Boot: 2, Real: 1_790_000_000_000_000_000, Raw: 4, TAI: 5, Window: 6}},
		{Sample: kernel.Sample{Mono: 7}, ClockSet: true},
		{Sample: kernel.Sample{Mono: 8, Boot: 9, Real: 10}},
	}
	var buf bytes.Buffer
	w := NewWriter(&buf)
	for _, l := range want {
		if err := w.Write(l); err != nil {
			t.Fatal(err)
		}
	}
	got, err := readAll(t, &buf)
	if err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("round trip (-want +got):\n%s", diff)
	}
}

func TestWriterDoesNotAllocate(t *testing.T) {
	w := NewWriter(io.Discard)
	s := kernel.Sample{Mono: 1, Boot: 2, Real: 3, Raw: 4, TAI: 5, Window: 6}
	if n := testing.AllocsPerRun(100, func() { _ = w.Sample(s) }); n != 0 {
		t.Errorf("Writer.Sample allocates %v times, want 0", n)
	}
}

func TestRecord(t *testing.T) {
	t.Parallel()
	ctx, cancel := context.WithCancel(t.Context())
	// A steady clock that sees a clock set after each of its first two
	// reads and cancels at its third. The interval is an hour so that no
	// tick competes with the marks: the lines' order is fixed.
	marks := make(chan hostclock.Mark, 1)
	clocks := &hostclocktest.Clocks{Start: kernel.Sample{Real: 1e18, Window: 1}, OnRead: func(n int) {
		if n < 3 {
			marks <- hostclock.Mark{Mono: int64(n)*int64(time.Millisecond) + 1}
			return
		}
		cancel()
	}}
	var buf bytes.Buffer
	if _, err := Record(ctx, clocks, marks, time.Hour, &buf); err != nil {
		t.Fatalf("Record() = %v", err)
	}
	got, err := readAll(t, &buf)
	if err != nil {
		t.Fatalf("reading the recorded trace: %v\n%s", err, buf.String())
	}
	// Each mark is written, then the sample it triggers.
	want := []Line{
		{Sample: kernel.Sample{Mono: 1e6, Boot: 1e6, Real: 1e18 + 1e6, Window: 1}},
		{Sample: kernel.Sample{Mono: 1e6 + 1}, ClockSet: true},
		{Sample: kernel.Sample{Mono: 2e6, Boot: 2e6, Real: 1e18 + 2e6, Window: 1}},
		{Sample: kernel.Sample{Mono: 2e6 + 1}, ClockSet: true},
		{Sample: kernel.Sample{Mono: 3e6, Boot: 3e6, Real: 1e18 + 3e6, Window: 1}},
	}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("recorded trace (-want +got):\n%s", diff)
	}
}

func TestRecordRealClocks(t *testing.T) {
	t.Parallel()
	ctx, cancel := context.WithTimeout(t.Context(), 50*time.Millisecond)
	defer cancel()
	var buf bytes.Buffer
	if _, err := Record(ctx, hostclock.SysClocks{}, nil, 5*time.Millisecond, &buf); err != nil {
		t.Fatal(err)
	}
	lines, err := readAll(t, &buf)
	if err != nil || len(lines) < 2 {
		t.Fatalf("recorded %d lines, err %v", len(lines), err)
	}
}

func FuzzReader(f *testing.F) {
	f.Add([]byte(`{"mono_ns":1,"boot_ns":2,"real_ns":3,"raw_ns":4,"tai_ns":5,"window_ns":6}` + "\n" + `{"mono_ns":1,"clock_set":true}`))
	f.Add([]byte(`{"mono_ns":1,"boot_ns":2}`))
	f.Add([]byte("\n\n{}\n"))
	f.Add([]byte(`{"mono_ns":9223372036854775807,"boot_ns":-9223372036854775808,"real_ns":0}`))
	f.Fuzz(func(t *testing.T, data []byte) {
		lines, _ := readAll(t, bytes.NewReader(data))
		// Whatever was accepted must survive a round trip through Writer.
		var buf bytes.Buffer
		w := NewWriter(&buf)
		for _, l := range lines {
			if err := w.Write(l); err != nil {
				t.Fatal(err)
			}
		}
		again, err := readAll(t, &buf)
		if err != nil {
			t.Fatalf("re-reading written lines: %v", err)
		}
		if diff := cmp.Diff(lines, again); diff != "" {
			t.Fatalf("round trip (-first +second):\n%s", diff)
		}
	})
}
