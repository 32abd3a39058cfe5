//go:build linux

package main

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestHostDirsRefusesLinksAndDotDot: host-dirs followed a symlinked
// directory (its root-owned target became nobody:nogroup 750), accepted
// `..` and created missing parents as a side effect (issue 32, item 5). It
// walks down with openat(O_NOFOLLOW), refuses `..`, and creates only the
// last component.
func TestHostDirsRefusesLinksAndDotDot(t *testing.T) {
	t.Parallel()
	uid, gid := os.Getuid(), os.Getgid() // a chown anyone may make
	root := t.TempDir()
	target := filepath.Join(root, "target")
	if err := os.Mkdir(target, 0o700); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink(target, filepath.Join(root, "linkdir")); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink(root, filepath.Join(root, "linkparent")); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(root, "file"), nil, 0o600); err != nil {
		t.Fatal(err)
	}
	existing := filepath.Join(root, "existing")
	if err := os.Mkdir(existing, 0o700); err != nil {
		t.Fatal(err)
	}
	hostDirs := func(dir string) (int, string) {
		var out, errOut bytes.Buffer
		code := run(context.Background(), []string{"host-dirs", fmt.Sprintf("--uid=%d", uid), fmt.Sprintf("--gid=%d", gid), "--mode=0750", dir}, &out, &errOut)
		return code, out.String() + errOut.String()
	}
	for _, tc := range []struct {
		name, dir string
		code      int
		want      string
	}{
		{"the directory is a link", filepath.Join(root, "linkdir"), 1, root + "/linkdir is a symbolic link: refusing to follow it"},
		{"a parent is a link", filepath.Join(root, "linkparent", "new"), 1, root + "/linkparent is a symbolic link"},
		{"dot-dot", root + "/target/../escaped", 2, `a ".." component`},
		{"missing parents", filepath.Join(root, "a", "b", "c"), 1, root + "/a does not exist: host-dirs creates only the last component"},
		{"a file", filepath.Join(root, "file"), 1, root + "/file is not a directory"},
		{"relative", "run/clockwatch", 2, "want an absolute path"},
		{"new", filepath.Join(root, "new"), 0, root + "/new: created, owner"},
		{"existing", existing, 0, existing + ": existed, owner"},
	} {
		code, out := hostDirs(tc.dir)
		if code != tc.code || !strings.Contains(out, tc.want) {
			t.Errorf("%s: host-dirs %s: exit %d, %q; want %d and %q", tc.name, tc.dir, code, out, tc.code, tc.want)
		}
	}
	// Nothing happened to what the refused paths pointed at or named.
	if fi, err := os.Stat(target); err != nil || fi.Mode().Perm() != 0o700 {
		t.Errorf("the link's target: %v, %v; want it untouched at 0700", fi.Mode(), err)
	}
	for _, p := range []string{filepath.Join(root, "escaped"), filepath.Join(root, "a"), filepath.Join(root, "new", "x")} {
		if _, err := os.Lstat(p); !errors.Is(err, os.ErrNotExist) {
			t.Errorf("%s was created: %v", p, err)
		}
	}
	for _, p := range []string{filepath.Join(root, "new"), existing} {
		if fi, err := os.Lstat(p); err != nil || !fi.IsDir() || fi.Mode().Perm() != 0o750 {
			t.Errorf("%s: %v, %v; want a directory with mode 0750", p, fi.Mode(), err)
		}
	}
}
