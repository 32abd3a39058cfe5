//go:build linux

package host_test

import (
	"errors"
	"os"
	"path/filepath"
	"syscall"
	"testing"

	"github.com/clockwatch/clockwatch/internal/host"
)

// TestRawStats compares the raw fstat and lstat with the syscall package's.
func TestRawStats(t *testing.T) {
	dir := t.TempDir()
	file := filepath.Join(dir, "f")
	if err := os.WriteFile(file, make([]byte, 80), 0o644); err != nil {
		t.Fatal(err)
	}
	link := filepath.Join(dir, "l")
	if err := os.Symlink(file, link); err != nil {
		t.Fatal(err)
	}
	f, err := os.Open(file)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()

	var raw, want syscall.Stat_t
	if err := host.Fstat(int(f.Fd()), &raw); err != nil {
		t.Fatalf("Fstat: %v", err)
	}
	if err := syscall.Fstat(int(f.Fd()), &want); err != nil {
		t.Fatal(err)
	}
	if raw.Ino != want.Ino || raw.Dev != want.Dev || raw.Size != 80 {
		t.Errorf("Fstat: ino %d dev %d size %d, want ino %d dev %d size 80", raw.Ino, raw.Dev, raw.Size, want.Ino, want.Dev)
	}
	if err := host.Fstat(-1, &raw); !errors.Is(err, syscall.EBADF) {
		t.Errorf("Fstat(-1): %v, want EBADF", err)
	}

	if err := host.Lstat(file, &raw); err != nil || raw.Ino != want.Ino {
		t.Errorf("Lstat(file): ino %d, %v; want ino %d", raw.Ino, err, want.Ino)
	}
	if err := host.Lstat(link, &raw); err != nil || raw.Mode&syscall.S_IFMT != syscall.S_IFLNK {
		t.Errorf("Lstat(link): mode %#o, %v; want the link itself", raw.Mode, err)
	}
	if err := host.Lstat(filepath.Join(dir, "missing"), &raw); !errors.Is(err, syscall.ENOENT) {
		t.Errorf("Lstat(missing): %v, want ENOENT", err)
	}
	if err := host.Lstat("a\x00b", &raw); err == nil {
		t.Error("Lstat of a path with a NUL: no error")
	}
}

// TestReadTimex reads the kernel's clock state as the syscall package
// does (Modes 0: a read).
func TestReadTimex(t *testing.T) {
	var raw, want syscall.Timex
	state, err := host.ReadTimex(&raw) // Modes 0: a read (never a write here)
	if err != nil {
		t.Fatalf("ReadTimex: %v", err)
	}
	wantState, err := syscall.Adjtimex(&want)
	if err != nil {
		t.Fatal(err)
	}
	if state != wantState || raw.Status != want.Status || raw.Tick != want.Tick {
		t.Errorf("ReadTimex: state %d status %#x tick %d, want %d %#x %d", state, raw.Status, raw.Tick, wantState, want.Status, want.Tick)
	}
}
