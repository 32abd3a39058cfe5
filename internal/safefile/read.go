package safefile

import (
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"syscall"
)

// Links says which symbolic links an open follows.
type Links int

const (
	// NoLinks refuses a link as the path's last component (O_NOFOLLOW):
	// the state files, which clockwatch itself creates.
	NoLinks Links = iota
	// LinksWithinDir follows links that resolve inside the directory that
	// holds the path (os.Root: relative links only, never above it):
	// Kubernetes' projected volumes and ConfigMaps are made of them
	// (token -> ..data/token, ..data -> ..2026_12_04_...). A link that
	// leaves the directory (to /dev/zero, to another file elsewhere) is
	// refused.
	LinksWithinDir
	// AnyLinks follows every link: device nodes, which udev may name
	// through links anywhere under /dev. The type check and the content
	// check after the open are what protect them.
	AnyLinks
)

// Spec is what a file clockwatch reads must be.
type Spec struct {
	// What names the file in every error ("the Kubernetes token").
	What string
	// Limit is the most bytes Read reads: a larger file is refused
	// (0: the file must be empty, so every Spec sets it).
	Limit int64
	// Links says which links are followed.
	Links Links
	// CharDevice accepts a character device besides a regular file (the
	// VMClock device).
	CharDevice bool
}

// ErrTooLarge marks a file over its Spec's Limit.
var ErrTooLarge = errors.New("file too large")

// Open opens path read-only as spec says: never blocking (O_NONBLOCK: a
// FIFO's open returns at once, and is then refused), following only the
// links spec allows, and refusing anything but a regular file (or, with
// CharDevice, a character device). Every error names spec.What and path.
func Open(spec Spec, path string) (*os.File, error) {
	const flags = os.O_RDONLY | syscall.O_NONBLOCK | syscall.O_CLOEXEC
	var f *os.File
	var err error
	switch spec.Links {
	case LinksWithinDir:
		var root *os.Root
		dir := filepath.Dir(path)
		if root, err = os.OpenRoot(dir); err != nil {
			return nil, fmt.Errorf("%s %s: %w", spec.What, path, err)
		}
		f, err = root.OpenFile(filepath.Base(path), flags, 0)
		root.Close()
		if err != nil && !errors.Is(err, os.ErrNotExist) && !errors.Is(err, os.ErrPermission) {
			// os.Root's "path escapes from parent": an absolute link,
			// or a relative one that climbs out of dir.
			if fi, lerr := os.Lstat(path); lerr == nil && fi.Mode()&os.ModeSymlink != 0 {
				target, _ := os.Readlink(path)
				return nil, fmt.Errorf("%s %s is a symbolic link to %s, outside %s: refusing to follow it (links are followed only within the file's own directory, as Kubernetes' projected volumes make them; give the file's real path): %w",
					spec.What, path, target, dir, ErrNotRegular)
			}
		}
	case AnyLinks:
		f, err = os.OpenFile(path, flags, 0)
	default:
		f, err = os.OpenFile(path, flags|syscall.O_NOFOLLOW, 0)
		if errors.Is(err, syscall.ELOOP) {
			return nil, fmt.Errorf("%s %s is a symbolic link: refusing to follow it (give the file's real path): %w", spec.What, path, ErrNotRegular)
		}
	}
	if err != nil {
		// The bare reason (ENOENT, EACCES): the path is said once, whole
		// (os.Root's errors name only the last component).
		if pe := (*os.PathError)(nil); errors.As(err, &pe) {
			err = pe.Err
		}
		return nil, fmt.Errorf("%s %s: %w", spec.What, path, err)
	}
	fi, err := f.Stat()
	if err != nil {
		f.Close()
		return nil, fmt.Errorf("%s %s: %w", spec.What, path, err)
	}
	m := fi.Mode()
	if m.IsRegular() || spec.CharDevice && m&os.ModeCharDevice != 0 {
		return f, nil
	}
	f.Close()
	want := "a regular file"
	if spec.CharDevice {
		want = "a character device or a regular file"
	}
	return nil, fmt.Errorf("%s %s is a %s, not %s: refusing it: %w", spec.What, path, kind(m), want, ErrNotRegular)
}

// Read reads the file at path as spec says (see Open), at most spec.Limit
// bytes: a larger file is refused after reading Limit+1 bytes, never read
// whole (a link to a huge file, or a file that grows while read, costs no
// more).
func Read(spec Spec, path string) ([]byte, error) {
	f, err := Open(spec, path)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	return ReadAll(spec, path, f)
}

// ReadAll reads r (the file Open returned) up to spec.Limit bytes.
func ReadAll(spec Spec, path string, r io.Reader) ([]byte, error) {
	b, err := io.ReadAll(io.LimitReader(r, spec.Limit+1))
	if err != nil {
		return nil, fmt.Errorf("reading %s %s: %w", spec.What, path, err)
	}
	if int64(len(b)) > spec.Limit {
		return nil, fmt.Errorf("%s %s is larger than %s: refusing it: %w", spec.What, path, byteSize(spec.Limit), ErrTooLarge)
	}
	return b, nil
}

// byteSize writes n the way limits are documented: 1 MiB, 64 KiB, 80 bytes.
func byteSize(n int64) string {
	switch {
	case n >= 1<<20 && n%(1<<20) == 0:
		return fmt.Sprintf("%d MiB", n>>20)
	case n >= 1<<10 && n%(1<<10) == 0:
		return fmt.Sprintf("%d KiB", n>>10)
	}
	return fmt.Sprintf("%d bytes", n)
}
