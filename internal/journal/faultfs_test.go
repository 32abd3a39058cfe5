package journal

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"sync"
)

// ErrCrashed is what every operation of a FaultFS returns from its crash
// point on.
var ErrCrashed = errors.New("injected crash")

// FaultFS wraps an FS and simulates a crash at its Nth durable operation
// (counted from 1): a write, fsync, truncate, rename, removal, creation or
// chmod. That operation does not happen (a write of more than one byte
// happens torn, half of it reaching the disk, when Torn is set), and every
// later one fails with ErrCrashed, as if the process had died there: the
// files hold exactly what the operations before it left.
//
// Because the journal fsyncs each write before the next one, "everything
// before N happened, N did not" covers what a real crash can leave: a write
// not yet fsync'd is either lost (a crash at the write) or on disk (a crash at
// its fsync). With CrashAt 0 nothing fails and Ops counts the operations, so
// that a test can enumerate every crash point of a scenario.
type FaultFS struct {
	FS
	CrashAt int
	Torn    bool

	mu  sync.Mutex
	ops int
	log []string
}

var _ FS = (*FaultFS)(nil)

// Ops returns how many durable operations were attempted.
func (f *FaultFS) Ops() int {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.ops
}

// Crashed reports whether the crash point has been reached.
func (f *FaultFS) Crashed() bool {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.CrashAt > 0 && f.ops >= f.CrashAt
}

// Log returns the operations attempted, one "n op path" each, to name a
// crash point in a test failure.
func (f *FaultFS) Log() []string {
	f.mu.Lock()
	defer f.mu.Unlock()
	return append([]string(nil), f.log...)
}

// op counts one durable operation; it returns whether it may happen and
// whether it is the crash point itself.
func (f *FaultFS) op(what, path string) (ok, atCrash bool) {
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.CrashAt > 0 && f.ops >= f.CrashAt {
		return false, false
	}
	f.ops++
	f.log = append(f.log, fmt.Sprintf("%d %s %s", f.ops, what, filepath.Base(path)))
	if f.CrashAt > 0 && f.ops == f.CrashAt {
		return false, true
	}
	return true, false
}

func (f *FaultFS) fail(what, path string) error {
	return fmt.Errorf("%s %s: %w", what, path, ErrCrashed)
}

// MkdirAll counts as an operation only when it would create something; an
// existing directory is read, not written.
func (f *FaultFS) MkdirAll(dir string, perm os.FileMode) error {
	if st, err := os.Stat(dir); err == nil && st.IsDir() && !f.Crashed() {
		return nil
	}
	if ok, _ := f.op("mkdir", dir); !ok {
		return f.fail("mkdir", dir)
	}
	return f.FS.MkdirAll(dir, perm)
}

// OpenFile counts as an operation when it may create the file.
func (f *FaultFS) OpenFile(name string, flag int, perm os.FileMode) (File, error) {
	if f.Crashed() {
		return nil, f.fail("open", name)
	}
	if flag&os.O_CREATE != 0 {
		if _, err := os.Stat(name); err != nil {
			if ok, _ := f.op("create", name); !ok {
				return nil, f.fail("create", name)
			}
		}
	}
	file, err := f.FS.OpenFile(name, flag, perm)
	if err != nil {
		return nil, err
	}
	return &faultFile{File: file, fs: f}, nil
}

// CreateTemp is one operation.
func (f *FaultFS) CreateTemp(dir, pattern string) (File, error) {
	if ok, _ := f.op("create", filepath.Join(dir, pattern)); !ok {
		return nil, f.fail("create", filepath.Join(dir, pattern))
	}
	file, err := f.FS.CreateTemp(dir, pattern)
	if err != nil {
		return nil, err
	}
	return &faultFile{File: file, fs: f}, nil
}

// Rename is one operation.
func (f *FaultFS) Rename(from, to string) error {
	if ok, _ := f.op("rename", to); !ok {
		return f.fail("rename", to)
	}
	return f.FS.Rename(from, to)
}

// Remove is one operation.
func (f *FaultFS) Remove(name string) error {
	if ok, _ := f.op("remove", name); !ok {
		return f.fail("remove", name)
	}
	return f.FS.Remove(name)
}

// Chmod is one operation.
func (f *FaultFS) Chmod(name string, mode os.FileMode) error {
	if ok, _ := f.op("chmod", name); !ok {
		return f.fail("chmod", name)
	}
	return f.FS.Chmod(name, mode)
}

// SyncDir is one operation.
func (f *FaultFS) SyncDir(dir string) error {
	if ok, _ := f.op("syncdir", dir); !ok {
		return f.fail("syncdir", dir)
	}
	return f.FS.SyncDir(dir)
}

type faultFile struct {
	File
	fs *FaultFS
}

func (f *faultFile) Write(b []byte) (int, error) {
	ok, atCrash := f.fs.op("write", f.Name())
	if atCrash && f.fs.Torn && len(b) > 1 {
		n, _ := f.File.Write(b[:len(b)/2])
		return n, f.fs.fail("write", f.Name())
	}
	if !ok {
		return 0, f.fs.fail("write", f.Name())
	}
	return f.File.Write(b)
}

func (f *faultFile) Sync() error {
	if ok, _ := f.fs.op("fsync", f.Name()); !ok {
		return f.fs.fail("fsync", f.Name())
	}
	return f.File.Sync()
}

func (f *faultFile) Truncate(size int64) error {
	if ok, _ := f.fs.op("truncate", f.Name()); !ok {
		return f.fs.fail("truncate", f.Name())
	}
	return f.File.Truncate(size)
}

func (f *faultFile) Read(b []byte) (int, error) {
	if f.fs.Crashed() {
		return 0, f.fs.fail("read", f.Name())
	}
	return f.File.Read(b)
}

func (f *faultFile) ReadAt(b []byte, off int64) (int, error) {
	if f.fs.Crashed() {
		return 0, f.fs.fail("read", f.Name())
	}
	return f.File.ReadAt(b, off)
}
