package safefile

import (
	"errors"
	"io/fs"
	"os"
	"slices"
	"strings"
	"syscall"
)

// ReadFS is the whole file system, read-only, for another program's
// configuration read by name and pattern (chrony.conf and the files it
// includes): ReadFile goes through Read with Spec, and nothing it does
// blocks (a FIFO among the included files stalled the audit). Names are
// fs.FS names, relative to /.
type ReadFS struct{ Spec Spec }

var (
	_ fs.ReadFileFS = ReadFS{}
	_ fs.ReadDirFS  = ReadFS{}
	_ fs.StatFS     = ReadFS{}
)

func (ReadFS) path(name string) (string, error) {
	if !fs.ValidPath(name) {
		return "", &fs.PathError{Op: "open", Path: name, Err: fs.ErrInvalid}
	}
	if name == "." {
		return "/", nil
	}
	return "/" + name, nil
}

// Open opens name without blocking (O_NONBLOCK) and without a type check:
// fs.FS's Open also opens directories.
func (r ReadFS) Open(name string) (fs.File, error) {
	p, err := r.path(name)
	if err != nil {
		return nil, err
	}
	return os.OpenFile(p, os.O_RDONLY|syscall.O_NONBLOCK|syscall.O_CLOEXEC, 0)
}

// ReadFile reads name through Read(r.Spec). A file that is missing or
// unreadable fails as os.ReadFile does (an *fs.PathError); one that is not
// what Spec wants fails with Read's message.
func (r ReadFS) ReadFile(name string) ([]byte, error) {
	p, err := r.path(name)
	if err != nil {
		return nil, err
	}
	b, err := Read(r.Spec, p)
	if err != nil && !errors.Is(err, ErrNotRegular) && !errors.Is(err, ErrTooLarge) {
		if cause := errors.Unwrap(err); cause != nil {
			err = &fs.PathError{Op: "open", Path: p, Err: cause}
		}
	}
	return b, err
}

// ReadDir lists the directory name (O_DIRECTORY: anything else fails at
// once), sorted by name.
func (r ReadFS) ReadDir(name string) ([]fs.DirEntry, error) {
	p, err := r.path(name)
	if err != nil {
		return nil, err
	}
	f, err := os.OpenFile(p, os.O_RDONLY|syscall.O_NONBLOCK|syscall.O_DIRECTORY|syscall.O_CLOEXEC, 0)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	entries, err := f.ReadDir(-1)
	slices.SortFunc(entries, func(a, b fs.DirEntry) int { return strings.Compare(a.Name(), b.Name()) })
	return entries, err
}

// Stat is os.Stat: it opens nothing.
func (r ReadFS) Stat(name string) (fs.FileInfo, error) {
	p, err := r.path(name)
	if err != nil {
		return nil, err
	}
	return os.Stat(p)
}
