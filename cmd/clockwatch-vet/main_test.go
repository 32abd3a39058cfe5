package main

import (
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
)

// TestFixReportsWhatItCannotFix: clockwatch-vet -fix exited 0 and printed
// nothing for a finding that has no suggested fix (issue 32, item 6): the
// finding was dropped unseen. It prints it now, marked not fixed, and still
// applies the fixes it has.
func TestFixReportsWhatItCannotFix(t *testing.T) {
	t.Parallel()
	bin := filepath.Join(t.TempDir(), "clockwatch-vet")
	build := exec.Command("go", "build", "-o", bin, ".")
	build.Env = append(os.Environ(), "GOWORK=off")
	if out, err := build.CombinedOutput(); err != nil {
		t.Fatalf("go build: %v\n%s", err, out)
	}
	mod := t.TempDir()
	src := `package p

import "time"

type lock struct{ expireAt int64 }

func (l *lock) acquire() { l.expireAt = time.Now().UnixMilli() + 15_000 }

func (l *lock) expired() bool {
	now := time.Now().UnixMilli()
	return now >= l.expireAt
}

func since() time.Duration {
	start := time.Now()
	return time.Now().Sub(start.UTC())
}
`
	for name, content := range map[string]string{"go.mod": "module p\n\ngo 1.22\n", "p.go": src} {
		if err := os.WriteFile(filepath.Join(mod, name), []byte(content), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	cmd := exec.Command(bin, "-fix", "./...")
	cmd.Dir = mod
	cmd.Env = append(os.Environ(), "GOWORK=off", "GOFLAGS=-mod=mod")
	out, err := cmd.CombinedOutput()
	if !strings.Contains(string(out), "p.go:11:9: now >= l.expireAt compares wall-clock readings") || !strings.Contains(string(out), "not fixed") {
		t.Errorf("clockwatch-vet -fix: %v\n%s\nwant the finding without a fix, marked not fixed", err, out)
	}
	if strings.Contains(string(out), "Sub") {
		t.Errorf("a finding with a fix was reported as not fixed:\n%s", out)
	}
	b, err := os.ReadFile(filepath.Join(mod, "p.go"))
	if err != nil {
		t.Fatal(err)
	}
	if strings.Contains(string(b), "start.UTC()") {
		t.Errorf("the suggested fix was not applied:\n%s", b)
	}
}

func TestFixRequested(t *testing.T) {
	t.Parallel()
	for args, want := range map[string]bool{
		"-fix ./...": true, "--fix ./...": true, "-fix=true ./...": true, "-fix=false ./...": false,
		"./...": false, "-diff ./...": false, "-- -fix": false,
	} {
		if got := fixRequested(strings.Fields(args)); got != want {
			t.Errorf("fixRequested(%s) = %v, want %v", args, got, want)
		}
	}
}
