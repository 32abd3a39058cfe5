package safefile

import (
	"errors"
	"fmt"
	"io"
	"os"
	"syscall"
)

// Flags are added to every open: O_NOFOLLOW refuses a symbolic link as the
// last component (ELOOP), O_NONBLOCK makes the open of a FIFO return at
// once (it would wait for a writer) so that the check after it can refuse
// it. On a regular file O_NONBLOCK changes nothing.
const Flags = syscall.O_NOFOLLOW | syscall.O_NONBLOCK | syscall.O_CLOEXEC

// ErrNotRegular marks a path that is not what clockwatch keeps there.
var ErrNotRegular = errors.New("not a regular file")

// Explain turns an open's error into one that names the path and says what
// is wrong: a symbolic link (ELOOP under O_NOFOLLOW) is refused, not
// followed. Other errors are returned as they are.
func Explain(what, path string, err error) error {
	if errors.Is(err, syscall.ELOOP) {
		return fmt.Errorf("%s %s is a symbolic link: refusing to follow it (remove it; clockwatch creates the file): %w", what, path, ErrNotRegular)
	}
	return err
}

// Check reports an error naming the path when fi is not a regular file.
func Check(what, path string, fi os.FileInfo) error {
	if fi.Mode().IsRegular() {
		return nil
	}
	return fmt.Errorf("%s %s is a %s, not a regular file: refusing it (remove it; clockwatch creates the file): %w", what, path, kind(fi.Mode()), ErrNotRegular)
}

func kind(m os.FileMode) string {
	switch {
	case m&os.ModeNamedPipe != 0:
		return "FIFO"
	case m&os.ModeSocket != 0:
		return "socket"
	case m&os.ModeDevice != 0:
		return "device"
	case m&os.ModeSymlink != 0:
		return "symbolic link"
	case m.IsDir():
		return "directory"
	}
	return "special file"
}

// Stater is what Checked needs of an open file.
type Stater interface {
	Stat() (os.FileInfo, error)
	io.Closer
}

// Checked completes an open made with Flags: it explains err, or closes f
// and fails when f is not a regular file.
func Checked[F Stater](what, path string, f F, err error) (F, error) {
	var zero F
	if err != nil {
		return zero, Explain(what, path, err)
	}
	fi, err := f.Stat()
	if err == nil {
		err = Check(what, path, fi)
	}
	if err != nil {
		f.Close()
		return zero, err
	}
	return f, nil
}

// OpenFile is os.OpenFile with Flags and the regular-file check.
func OpenFile(what, path string, flag int, perm os.FileMode) (*os.File, error) {
	f, err := os.OpenFile(path, flag|Flags, perm)
	return Checked(what, path, f, err)
}

// ReadFile reads the regular file at path, at most limit bytes (more is an
// error): os.ReadFile without following a link or blocking on a FIFO.
func ReadFile(what, path string, limit int64) ([]byte, error) {
	f, err := OpenFile(what, path, os.O_RDONLY, 0)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	return ReadAll(Spec{What: what, Limit: limit}, path, f)
}

// Dir checks that path is a directory itself, not a symbolic link to one
// (os.MkdirAll and every open below it follow a link: the files would land
// wherever it points).
func Dir(what, path string) error {
	fi, err := os.Lstat(path)
	if err != nil {
		return err
	}
	if fi.Mode()&os.ModeSymlink != 0 {
		return fmt.Errorf("%s %s is a symbolic link: refusing to follow it (make it a directory): %w", what, path, ErrNotRegular)
	}
	if !fi.IsDir() {
		return fmt.Errorf("%s %s is a %s, not a directory: %w", what, path, kind(fi.Mode()), ErrNotRegular)
	}
	return nil
}
