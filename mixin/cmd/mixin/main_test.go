package main

import (
	"bytes"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
)

// TestOutRequired: the command writes only where -out says. Before the fix,
// docs/kubernetes.md's `go run ./mixin/cmd/mixin -config '{…}'` (no -out)
// rewrote six tracked files of the checkout with another setup's rules.
// The binary runs in an empty directory, so that a command that still
// wrote to "." would show it there, not in the checkout.
func TestOutRequired(t *testing.T) {
	t.Parallel()
	mixinDir, err := filepath.Abs("../..")
	if err != nil {
		t.Fatal(err)
	}
	bin := filepath.Join(t.TempDir(), "mixin")
	if out, err := exec.Command("go", "build", "-o", bin, ".").CombinedOutput(); err != nil {
		t.Fatalf("go build: %v\n%s", err, out)
	}
	for _, tc := range []struct {
		name string
		args []string
		want string
	}{
		{"config without -out", []string{"-config", `{"offsetCriticalSeconds": 0.2}`}, "-out DIR, a directory of your own"},
		{"no flags", nil, "-out . in the repository's root (make mixin)"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			cwd := t.TempDir()
			cmd := exec.Command(bin, append([]string{"-mixin", mixinDir}, tc.args...)...)
			cmd.Dir = cwd
			var stderr bytes.Buffer
			cmd.Stderr = &stderr
			err := cmd.Run()
			if ee, ok := err.(*exec.ExitError); !ok || ee.ExitCode() != 2 || !strings.Contains(stderr.String(), tc.want) {
				t.Errorf("mixin %s: %v, stderr %q; want exit 2 naming %q", strings.Join(tc.args, " "), err, stderr.String(), tc.want)
			}
			if entries, _ := os.ReadDir(cwd); len(entries) > 0 {
				t.Errorf("mixin %s wrote into its working directory: %v", strings.Join(tc.args, " "), entries)
			}
		})
	}
}

// TestOutWrites: with -out the files land under it, each at its path in the
// repository, and the paths are printed.
func TestOutWrites(t *testing.T) {
	t.Parallel()
	out := t.TempDir()
	var stdout, stderr bytes.Buffer
	if code := run([]string{"-mixin", "../..", "-out", out, "-config", `{"clockwatchSelector": "job=\"node\""}`}, &stdout, &stderr); code != 0 {
		t.Fatalf("exit %d: %s", code, stderr.String())
	}
	rules, err := os.ReadFile(filepath.Join(out, "alerts", "clockwatch.rules.yml"))
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(string(rules), `job="node"`) {
		t.Errorf("the rules do not select job=\"node\"")
	}
	if !strings.Contains(stdout.String(), filepath.Join(out, "dashboards", "clockwatch.json")+"\n") {
		t.Errorf("printed:\n%s", stdout.String())
	}
}
