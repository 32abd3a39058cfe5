package main

import (
	"bytes"
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
)

func runCLI(t *testing.T, args ...string) (code int, stdout, stderr string) {
	t.Helper()
	var out, errOut bytes.Buffer
	code = run(t.Context(), args, &out, &errOut)
	return code, out.String(), errOut.String()
}

func TestReplayCommand(t *testing.T) {
	t.Parallel()
	const trace = "../../trace/testdata/chrony-step-back-12.4s.trace.jsonl"
	code, out, errOut := runCLI(t, "replay", trace)
	want, err := os.ReadFile("../../trace/testdata/chrony-step-back-12.4s.events.jsonl")
	if err != nil {
		t.Fatal(err)
	}
	if code != 0 || errOut != "" {
		t.Fatalf("replay exit %d, stderr %q", code, errOut)
	}
	if diff := cmp.Diff(string(want), out); diff != "" {
		t.Errorf("replay output (-want +got):\n%s", diff)
	}
}

func TestReplayCommandBadLine(t *testing.T) {
	t.Parallel()
	path := filepath.Join(t.TempDir(), "bad.jsonl")
	os.WriteFile(path, []byte(`{"mono_ns":1,"boot_ns":1,"real_ns":1}`+"\n"+`{"mono_ns":2,"boot_ns":2}`+"\n"), 0o644)
	code, _, errOut := runCLI(t, "replay", path)
	if want := "clockwatch: replay " + path + ": trace line 2: sample without real_ns\n"; code != 1 || errOut != want {
		t.Errorf("exit %d, stderr %q; want 1, %q", code, errOut, want)
	}
}

func TestReplayCommandUsesConfig(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	cfg := filepath.Join(dir, "clockwatch.yml")
	os.WriteFile(cfg, []byte("step:\n  min_step: 2ms\n"), 0o644)
	// A 1 ms step is below min_step: nothing to report.
	code, out, errOut := runCLI(t, "--config.file", cfg, "replay", "../../trace/testdata/sampling-only-steps-1ms.trace.jsonl")
	if code != 0 || out != "" {
		t.Errorf("exit %d, stdout %q, stderr %q; want 0 and no events", code, out, errOut)
	}
	os.WriteFile(cfg, []byte("clock:\n  sample_interval: -1s\n"), 0o644)
	code, _, errOut = runCLI(t, "--config.file", cfg, "replay", "x")
	if code != 2 || !strings.Contains(errOut, "clockwatch.yml:2: clock.sample_interval: must be between 1ms and 1m, got -1s") {
		t.Errorf("exit %d, stderr %q; want 2 and the field named", code, errOut)
	}
}

func TestEventsCommand(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	data, err := os.ReadFile("../../journal/testdata/print.jsonl")
	if err != nil {
		t.Fatal(err)
	}
	os.WriteFile(filepath.Join(dir, "events.jsonl"), data, 0o640)
	code, out, errOut := runCLI(t, "events", "--journal.dir", dir, "--since", "2026-11-30T12:00:00Z")
	if code != 0 || errOut != "" || strings.Count(out, "\n") != 2 || !strings.Contains(out, "resume after 8h0m0s") {
		t.Errorf("events: exit %d, stdout %q, stderr %q", code, out, errOut)
	}
	code, out, _ = runCLI(t, "events", "--journal.dir", dir, "--json")
	if code != 0 || out != string(data) {
		t.Errorf("events --json: exit %d, output differs from the journal:\n%s", code, out)
	}
	code, _, errOut = runCLI(t, "events", "--journal.dir", t.TempDir())
	if code != 0 || !strings.Contains(errOut, "No clock events") {
		t.Errorf("empty journal: exit %d, stderr %q", code, errOut)
	}
}

func TestParseSince(t *testing.T) {
	t.Parallel()
	now := time.Date(2026, 11, 30, 4, 0, 0, 0, time.UTC)
	for _, tc := range []struct {
		in      string
		want    time.Time
		wantErr bool
	}{
		{"", time.Time{}, false},
		{"1h", now.Add(-time.Hour), false},
		{"2026-11-29T00:00:00Z", time.Date(2026, 11, 29, 0, 0, 0, 0, time.UTC), false},
		{"-1h", time.Time{}, true},
		{"yesterday", time.Time{}, true},
	} {
		got, err := parseSince(tc.in, now)
		if (err != nil) != tc.wantErr || !got.Equal(tc.want) {
			t.Errorf("parseSince(%q) = %v, %v", tc.in, got, err)
		}
	}
}

func TestRecordCommand(t *testing.T) {
	t.Parallel()
	out := filepath.Join(t.TempDir(), "trace.jsonl")
	ctx, cancel := context.WithTimeout(t.Context(), 30*time.Second)
	defer cancel()
	var stdout, stderr bytes.Buffer
	if code := run(ctx, []string{"record", "--duration", "120ms", "--interval", "20ms", "--out", out}, &stdout, &stderr); code != 0 {
		t.Fatalf("record exit %d: %s", code, stderr.String())
	}
	code, events, errOut := runCLI(t, "replay", out)
	if code != 0 || events != "" {
		t.Errorf("replaying a steady recording: exit %d, events %q, stderr %q", code, events, errOut)
	}
	b, _ := os.ReadFile(out)
	if n := strings.Count(string(b), "\n"); n < 3 {
		t.Errorf("recorded %d lines in 120ms at 20ms, want at least 3", n)
	}
}
