package journal

import (
	"io"
	"os"
)

// FS is the journal's view of the file system: every call that changes what
// is on disk goes through it, so that a test can make each durable write fail
// in turn (FaultFS) and prove the epoch survives a crash at any of them.
type FS interface {
	MkdirAll(dir string, perm os.FileMode) error
	OpenFile(name string, flag int, perm os.FileMode) (File, error)
	CreateTemp(dir, pattern string) (File, error)
	Rename(from, to string) error
	Remove(name string) error
	Chmod(name string, mode os.FileMode) error
	// SyncDir fsyncs a directory, making renames and creations in it
	// durable.
	SyncDir(dir string) error
}

// File is an open file of an FS.
type File interface {
	io.Reader
	io.ReaderAt
	io.Writer
	io.Seeker
	io.Closer
	Sync() error
	Truncate(size int64) error
	Stat() (os.FileInfo, error)
	Name() string
}

// OSFS is the real file system.
type OSFS struct{}

var _ FS = OSFS{}

// MkdirAll is os.MkdirAll.
func (OSFS) MkdirAll(dir string, perm os.FileMode) error { return os.MkdirAll(dir, perm) }

// OpenFile is os.OpenFile.
func (OSFS) OpenFile(name string, flag int, perm os.FileMode) (File, error) {
	return os.OpenFile(name, flag, perm)
}

// CreateTemp is os.CreateTemp.
func (OSFS) CreateTemp(dir, pattern string) (File, error) { return os.CreateTemp(dir, pattern) }

// Rename is os.Rename.
func (OSFS) Rename(from, to string) error { return os.Rename(from, to) }

// Remove is os.Remove.
func (OSFS) Remove(name string) error { return os.Remove(name) }

// Chmod is os.Chmod.
func (OSFS) Chmod(name string, mode os.FileMode) error { return os.Chmod(name, mode) }

// SyncDir opens dir and fsyncs it.
func (OSFS) SyncDir(dir string) error {
	d, err := os.Open(dir)
	if err != nil {
		return err
	}
	defer d.Close()
	return d.Sync()
}
