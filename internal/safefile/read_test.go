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

// TestOpenRefusesHostileReads: every file clockwatch reads goes through
// safefile.Open. Before it, a FIFO as the token or the configuration hung
// the read for ever (and SIGTERM with it), a link to /dev/zero read until
// memory ran out, and a link to an unrelated file sent that file's content
// (issue 32, item 3). Links that stay in the file's own directory (a
// projected token: token -> ..data/token) are followed.
func TestOpenRefusesHostileReads(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	write := func(name, content string) string {
		p := filepath.Join(dir, name)
		if err := os.MkdirAll(filepath.Dir(p), 0o700); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, []byte(content), 0o600); err != nil {
			t.Fatal(err)
		}
		return p
	}
	link := func(name, target string) string {
		p := filepath.Join(dir, name)
		if err := os.Symlink(target, p); err != nil {
			t.Fatal(err)
		}
		return p
	}
	// A projected volume as the kubelet makes it.
	write("..2026_12_04_10_00_00.123/token", "tok")
	link("..data", "..2026_12_04_10_00_00.123")
	projected := link("token", "..data/token")
	regular := write("regular", "content")
	other := t.TempDir()
	unrelated := filepath.Join(other, "secret")
	if err := os.WriteFile(unrelated, []byte("not a token"), 0o600); err != nil {
		t.Fatal(err)
	}
	fifo := filepath.Join(dir, "fifo")
	if err := syscall.Mkfifo(fifo, 0o600); err != nil {
		t.Fatal(err)
	}
	big := write("big", strings.Repeat("x", 101))

	for _, tc := range []struct {
		name, path string
		spec       safefile.Spec
		want       string // "" for the content "ok:..." below
		content    string
	}{
		{"regular", regular, safefile.Spec{What: "the file", Limit: 100}, "", "content"},
		{"projected token, links within its directory", projected, safefile.Spec{What: "the token", Limit: 100, Links: safefile.LinksWithinDir}, "", "tok"},
		{"projected token without links", projected, safefile.Spec{What: "the token", Limit: 100}, "the token " + projected + " is a symbolic link: refusing to follow it", ""},
		{"link to /dev/zero", link("zero", "/dev/zero"), safefile.Spec{What: "the token", Limit: 100, Links: safefile.LinksWithinDir}, "is a symbolic link to /dev/zero, outside " + dir, ""},
		{"link to an unrelated file", link("unrelated", unrelated), safefile.Spec{What: "the token", Limit: 100, Links: safefile.LinksWithinDir}, "is a symbolic link to " + unrelated + ", outside", ""},
		{"relative link climbing out", link("climb", "../"+filepath.Base(other)+"/secret"), safefile.Spec{What: "the token", Limit: 100, Links: safefile.LinksWithinDir}, "outside " + dir, ""},
		{"FIFO", fifo, safefile.Spec{What: "the configuration", Limit: 100}, "the configuration " + fifo + " is a FIFO, not a regular file", ""},
		{"FIFO within the directory", fifo, safefile.Spec{What: "the configuration", Limit: 100, Links: safefile.LinksWithinDir}, "is a FIFO, not a regular file", ""},
		{"FIFO as a device", fifo, safefile.Spec{What: "the VMClock device", Limit: 100, Links: safefile.AnyLinks, CharDevice: true}, "is a FIFO, not a character device or a regular file", ""},
		{"/dev/zero, devices refused", "/dev/zero", safefile.Spec{What: "the token", Limit: 100, Links: safefile.AnyLinks}, "/dev/zero is a device, not a regular file", ""},
		{"/dev/null as a device", "/dev/null", safefile.Spec{What: "the VMClock device", Limit: 100, Links: safefile.AnyLinks, CharDevice: true}, "", ""},
		{"directory", dir, safefile.Spec{What: "the file", Limit: 100, Links: safefile.AnyLinks}, "is a directory, not a regular file", ""},
		{"over the limit", big, safefile.Spec{What: "the token", Limit: 100}, "the token " + big + " is larger than 100 bytes: refusing it", ""},
		{"missing", filepath.Join(dir, "missing"), safefile.Spec{What: "the token", Limit: 100, Links: safefile.LinksWithinDir}, "the token " + filepath.Join(dir, "missing") + ": no such file or directory", ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			type result struct {
				b   []byte
				err error
			}
			done := make(chan result, 1)
			go func() {
				b, err := safefile.Read(tc.spec, tc.path)
				done <- result{b, err}
			}()
			var r result
			select {
			case r = <-done:
			case <-time.After(5 * time.Second):
				t.Fatal("the read blocked")
			}
			if tc.want == "" {
				if r.err != nil || string(r.b) != tc.content {
					t.Fatalf("Read: %q, %v; want %q", r.b, r.err, tc.content)
				}
				return
			}
			if r.err == nil || !strings.Contains(r.err.Error(), tc.want) {
				t.Errorf("Read: %q, %v; want an error with %q", r.b, r.err, tc.want)
			}
		})
	}
	if _, err := safefile.Read(safefile.Spec{What: "x", Limit: 10}, big); !errors.Is(err, safefile.ErrTooLarge) {
		t.Errorf("over the limit: %v, want ErrTooLarge", err)
	}
}
