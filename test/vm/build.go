package vm

import (
	"fmt"
	"os"
	"os/exec"
	"path"
	"path/filepath"
	"strconv"
	"sync"
	"testing"

	"github.com/clockwatch/clockwatch/internal/testtool"
)

// Builder builds static Go binaries for the guest (CGO_ENABLED=0, linux/amd64)
// into one directory, each package once. Share one across the tests of a
// package by making it in TestMain; Go's build cache makes a second Builder
// cost only the link.
type Builder struct {
	dir string

	mu    sync.Mutex
	built map[string]string // package → binary
}

// NewBuilder returns a Builder that writes its binaries into dir, which must
// exist and outlive the Builder's users.
func NewBuilder(dir string) *Builder { return &Builder{dir: dir, built: map[string]string{}} }

// Build returns the path of a static binary of the package pkg (an import
// path, or a path relative to the test's package directory like
// "./clockstep"), building it on first use. A build failure fails the test.
// Like Run, it skips the test under -short or without qemu or the kernel,
// before spending time on a build.
func (b *Builder) Build(t testing.TB, pkg string) string {
	t.Helper()
	require(t)
	goTool := testtool.Require(t, "go")
	b.mu.Lock()
	defer b.mu.Unlock()
	if bin, ok := b.built[pkg]; ok {
		return bin
	}
	bin := filepath.Join(b.dir, path.Base(pkg)+"-"+strconv.Itoa(len(b.built)))
	if err := buildStatic(goTool, pkg, bin); err != nil {
		t.Fatal(err)
	}
	b.built[pkg] = bin
	return bin
}

// BuildGo builds one static binary for the guest into the test's temporary
// directory.
func BuildGo(t testing.TB, pkg string) string {
	t.Helper()
	return NewBuilder(t.TempDir()).Build(t, pkg)
}

func buildStatic(goTool, pkg, out string) error {
	cmd := exec.Command(goTool, "build", "-trimpath", "-ldflags=-s -w", "-o", out, pkg)
	cmd.Env = append(os.Environ(), "CGO_ENABLED=0", "GOOS=linux", "GOARCH=amd64", "GOFLAGS=")
	if b, err := cmd.CombinedOutput(); err != nil {
		return fmt.Errorf("building %s for the guest: %w\n%s", pkg, err, b)
	}
	return nil
}
