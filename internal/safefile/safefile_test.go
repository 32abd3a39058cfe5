package safefile_test

import (
	"errors"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/clockwatch/clockwatch/internal/safefile"
)

func TestOpenRefusesWhatIsNotARegularFile(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	regular := filepath.Join(dir, "regular")
	if err := os.WriteFile(regular, []byte("x"), 0o600); err != nil {
		t.Fatal(err)
	}
	fifo := filepath.Join(dir, "fifo")
	if err := syscall.Mkfifo(fifo, 0o600); err != nil {
		t.Fatal(err)
	}
	link := filepath.Join(dir, "link")
	if err := os.Symlink(regular, link); err != nil {
		t.Fatal(err)
	}
	dangling := filepath.Join(dir, "dangling")
	if err := os.Symlink(filepath.Join(dir, "target"), dangling); err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		name, path string
		flag       int
		want       string
	}{
		{"regular", regular, os.O_RDONLY, ""},
		{"FIFO read", fifo, os.O_RDONLY, "fifo is a FIFO, not a regular file"},
		{"FIFO read-write", fifo, os.O_RDWR | os.O_CREATE, "fifo is a FIFO, not a regular file"},
		{"link", link, os.O_RDWR, "link is a symbolic link: refusing to follow it"},
		{"dangling link with O_CREATE", dangling, os.O_RDWR | os.O_CREATE, "dangling is a symbolic link"},
		{"directory", dir, os.O_RDONLY, "is a directory, not a regular file"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			done := make(chan error, 1)
			go func() {
				f, err := safefile.OpenFile("test file", tc.path, tc.flag, 0o600)
				if err == nil {
					f.Close()
				}
				done <- err
			}()
			var err error
			select {
			case err = <-done:
			case <-time.After(5 * time.Second):
				t.Fatal("the open blocked")
			}
			if tc.want == "" {
				if err != nil {
					t.Fatal(err)
				}
				return
			}
			if err == nil || !strings.Contains(err.Error(), tc.want) || !errors.Is(err, safefile.ErrNotRegular) {
				t.Errorf("error %v, want %q", err, tc.want)
			}
		})
	}
	if _, err := os.Lstat(filepath.Join(dir, "target")); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("the dangling link's target was created: %v", err)
	}
	if err := safefile.Dir("test dir", link); err == nil {
		t.Error("Dir accepted a link")
	}
	if err := safefile.Dir("test dir", dir); err != nil {
		t.Error(err)
	}
	if _, err := safefile.ReadFile("test file", regular, 0); err == nil || !strings.Contains(err.Error(), "larger than 0 bytes") {
		t.Errorf("ReadFile over its limit: %v", err)
	}
}
