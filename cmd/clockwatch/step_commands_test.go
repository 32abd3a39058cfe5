//go:build linux

package main

import (
	"bytes"
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
)

// runCLI runs a command line in this process, with its environment but
// without the machine's /etc/clockwatch/clockwatch.yml.
func runCLI(t *testing.T, args ...string) (code int, stdout, stderr string) {
	t.Helper()
	var out, errOut bytes.Buffer
	c := &cli{stdout: &out, stderr: &errOut, getenv: os.Getenv}
	code = c.run(t.Context(), args)
	return code, out.String(), errOut.String()
}

func TestReplayCommand(t *testing.T) {
	t.Parallel()
	const trace = "../../internal/trace/testdata/chrony-step-back-12.4s.trace.jsonl"
	code, out, errOut := runCLI(t, "replay", trace)
	want, err := os.ReadFile("../../internal/trace/testdata/chrony-step-back-12.4s.events.jsonl")
	if err != nil {
		t.Fatal(err)
	}
	// 43 lines: 42 samples and the clock-set mark.
	if wantErr := "clockwatch replay: 42 samples and 1 clock-set mark, 1 event\n"; code != 0 || errOut != wantErr {
		t.Fatalf("replay exit %d, stderr %q; want 0 and the summary %q", code, errOut, wantErr)
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
	code, out, errOut := runCLI(t, "replay", "--config.file", cfg, "../../internal/trace/testdata/sampling-only-steps-1ms.trace.jsonl")
	if code != 0 || out != "" {
		t.Errorf("exit %d, stdout %q, stderr %q; want 0 and no events", code, out, errOut)
	}
	os.WriteFile(cfg, []byte("clock:\n  sample_interval: -1s\n"), 0o644)
	code, _, errOut = runCLI(t, "replay", "--config.file", cfg, "x")
	if code != 2 || !strings.Contains(errOut, "clockwatch.yml:2: clock.sample_interval: must be between 1ms and 1m, got -1s") {
		t.Errorf("exit %d, stderr %q; want 2 and the field named", code, errOut)
	}
}

func TestEventsCommand(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	data, err := os.ReadFile("../../internal/journal/testdata/print.jsonl")
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
	empty := t.TempDir()
	code, _, errOut = runCLI(t, "events", "--journal.dir", empty)
	if want := "No clock events in the journal under " + empty + ".\n"; code != 0 || errOut != want {
		t.Errorf("empty journal: exit %d, stderr %q; want 0 and %q", code, errOut, want)
	}
	// All 5 events in the file are older than a minute.
	code, out, errOut = runCLI(t, "events", "--journal.dir", dir, "--since", "1m")
	if want := "No clock events in the last 1m (5 older) in the journal under " + dir + ".\n"; code != 0 || out != "" || errOut != want {
		t.Errorf("events --since 1m: exit %d, stdout %q, stderr %q; want 0 and %q", code, out, errOut, want)
	}
	missing := filepath.Join(empty, "no-such-dir")
	code, _, errOut = runCLI(t, "events", "--journal.dir", missing)
	if code != 1 || !strings.Contains(errOut, "the journal directory "+missing+" does not exist") {
		t.Errorf("events on a missing directory: exit %d, stderr %q; want 1 and an error naming it", code, errOut)
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
	c := &cli{stdout: &stdout, stderr: &stderr, getenv: os.Getenv}
	if code := c.run(ctx, []string{"record", "--duration", "120ms", "--interval", "20ms", "--out", out}); code != 0 {
		t.Fatalf("record exit %d: %s", code, stderr.String())
	}
	b, _ := os.ReadFile(out)
	n := strings.Count(string(b), "\n")
	if n < 3 {
		t.Errorf("recorded %d lines in 120ms at 20ms, want at least 3", n)
	}
	// A steady clock: every line a sample, no mark.
	if want := fmt.Sprintf("clockwatch record: %d samples and 0 clock-set marks written to %s\n", n, out); stderr.String() != want || stdout.Len() != 0 {
		t.Errorf("record: stdout %q, stderr %q; want nothing and %q", stdout.String(), stderr.String(), want)
	}
	code, events, errOut := runCLI(t, "replay", out)
	if want := fmt.Sprintf("clockwatch replay: %d samples and 0 clock-set marks, 0 events\n", n); code != 0 || events != "" || errOut != want {
		t.Errorf("replaying a steady recording: exit %d, events %q, stderr %q; want 0, none and %q", code, events, errOut, want)
	}
}
