//go:build linux

package main

import (
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strings"
	"testing"

	"github.com/clockwatch/clockwatch/internal/testtool"
)

// goCommand is the go command of this toolchain.
func goCommand(t *testing.T) string {
	t.Helper()
	if p := filepath.Join(runtime.GOROOT(), "bin", "go"); fileExists(p) {
		return p
	}
	p, err := exec.LookPath("go")
	if err != nil {
		t.Fatalf("no go command: %v", err)
	}
	return p
}

func fileExists(p string) bool {
	_, err := os.Stat(p)
	return err == nil
}

// TestOtherSystems: the daemon is Linux's and says so: a build for another
// system fails on the build constraint, not on a missing symbol; the client
// module (stepdown/, what applications import) builds for darwin, windows
// and freebsd on its own, as an application gets it (no workspace).
func TestOtherSystems(t *testing.T) {
	t.Parallel()
	testtool.Short(t)
	goBin := goCommand(t)
	// A file without the constraint makes another system's build compile
	// the daemon's packages and fail deep inside: name it at once.
	files, err := filepath.Glob("*.go")
	if err != nil {
		t.Fatal(err)
	}
	for _, f := range files {
		b, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		if !strings.HasPrefix(string(b), "//go:build linux\n") {
			t.Errorf("cmd/clockwatch/%s does not start with //go:build linux: every file of the daemon's command carries it", f)
		}
	}
	if t.Failed() {
		return
	}
	t.Run("daemon for darwin", func(t *testing.T) {
		t.Parallel()
		cmd := exec.Command(goBin, "build", "-o", os.DevNull, ".")
		cmd.Env = append(os.Environ(), "GOOS=darwin", "GOARCH=arm64")
		out, err := cmd.CombinedOutput()
		if err == nil {
			t.Fatal("GOOS=darwin go build ./cmd/clockwatch succeeded: the daemon is Linux's")
		}
		if !strings.Contains(string(out), "build constraints exclude all Go files") {
			t.Errorf("GOOS=darwin go build ./cmd/clockwatch fails, but not on the build constraint (every file of cmd/clockwatch carries //go:build linux):\n%s", out)
		}
	})
	for _, goos := range []string{"darwin", "windows", "freebsd"} {
		t.Run("stepdown for "+goos, func(t *testing.T) {
			t.Parallel()
			cmd := exec.Command(goBin, "build", "./...")
			cmd.Dir = filepath.Join("..", "..", "stepdown")
			cmd.Env = append(os.Environ(), "GOOS="+goos, "GOARCH=amd64", "GOWORK=off", "CGO_ENABLED=0")
			if out, err := cmd.CombinedOutput(); err != nil {
				t.Errorf("GOOS=%s go build ./... in stepdown/ (GOWORK=off): %v\n%s", goos, err, out)
			}
		})
	}
}
