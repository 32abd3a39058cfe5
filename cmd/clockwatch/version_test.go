//go:build linux

package main

import (
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"runtime/debug"
	"strings"
	"testing"
)

// A binary the build did not stamp says the module version `go install
// ...@vX.Y.Z` recorded, and the embedded VERSION file's, marked -dev, when
// built in a checkout.
func TestModuleVersion(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		recorded string
		ok       bool
		embedded string
		want     string
	}{
		{"v0.1.0", true, "0.2.0", "0.1.0"},
		{"v0.1.1-0.20261202061500-23edd8305578", true, "0.2.0", "0.1.1-0.20261202061500-23edd8305578"},
		{"(devel)", true, "0.2.0", "0.2.0-dev"},
		// Go 1.24's stamp in a clone without tags.
		{"v0.0.0-20261203172839-99957056f0f4+dirty", true, "0.2.0", "0.2.0-dev"},
		{"", false, "0.2.0", "0.2.0-dev"},
		{"", false, "", "dev"},
	} {
		read := func() (*debug.BuildInfo, bool) {
			return &debug.BuildInfo{Main: debug.Module{Version: tc.recorded}}, tc.ok
		}
		if got := moduleVersion(read, tc.embedded); got != tc.want {
			t.Errorf("recorded %q, VERSION %q: version %q, want %q", tc.recorded, tc.embedded, got, tc.want)
		}
	}
}

// TestPlainBuildVersion: a binary built with a plain `go build` (as `go run`
// builds it; these machines set GOFLAGS=-buildvcs=false) says the VERSION
// file's version, and, built where Go stamps the VCS revision
// (-buildvcs=true in a git checkout), that revision. Before the fix both said
// "version dev (branch: , revision: unknown)".
func TestPlainBuildVersion(t *testing.T) {
	t.Parallel()
	data, err := os.ReadFile("../../VERSION")
	if err != nil {
		t.Fatal(err)
	}
	want := "clockwatch, version " + strings.TrimSpace(string(data)) + "-dev (branch: unknown, revision: "
	_, out, _ := runBinary(t, nil, "version") // TestMain's plain go build
	if !strings.HasPrefix(out, want) {
		t.Errorf("clockwatch version of a plain go build:\n%s\nwant it to begin %q", out, want)
	}

	// Go stamps the revision only where .git is a directory (not in a git
	// worktree, whose .git is a file): build a copy of this tree, committed
	// in a repository of its own. -trimpath keeps the build cache's
	// packages valid whatever the directory.
	repo := t.TempDir()
	files, err := exec.Command("git", "-C", "../..", "ls-files", "-z", "--cached", "--others", "--exclude-standard").Output()
	if err != nil {
		t.Fatalf("git ls-files: %v (the test runs in a git checkout)", err)
	}
	for _, f := range strings.Split(strings.TrimRight(string(files), "\x00"), "\x00") {
		data, err := os.ReadFile(filepath.Join("../..", f))
		if errors.Is(err, os.ErrNotExist) {
			continue // deleted, not yet committed
		}
		if err != nil {
			t.Fatal(err)
		}
		if err := os.MkdirAll(filepath.Join(repo, filepath.Dir(f)), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(repo, f), data, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	git := func(args ...string) string {
		cmd := exec.Command("git", append([]string{"-C", repo, "-c", "user.name=t", "-c", "user.email=t@t", "-c", "commit.gpgsign=false"}, args...)...)
		out, err := cmd.CombinedOutput()
		if err != nil {
			t.Fatalf("git %s: %v\n%s", strings.Join(args, " "), err, out)
		}
		return strings.TrimSpace(string(out))
	}
	git("init", "-q")
	git("add", "-A")
	git("commit", "-q", "-m", "copy")
	head := git("rev-parse", "HEAD")
	bin := filepath.Join(t.TempDir(), "clockwatch")
	build := exec.Command("go", "build", "-buildvcs=true", "-trimpath", "-o", bin, "./cmd/clockwatch")
	build.Dir = repo
	if out, err := build.CombinedOutput(); err != nil {
		t.Fatalf("go build -buildvcs=true: %v\n%s", err, out)
	}
	out2, err := exec.Command(bin, "version").Output()
	if err != nil {
		t.Fatal(err)
	}
	if w := want + head + ")"; !strings.HasPrefix(string(out2), w) {
		t.Errorf("clockwatch version of a go build that stamps the revision:\n%s\nwant it to begin %q", out2, w)
	}
}
