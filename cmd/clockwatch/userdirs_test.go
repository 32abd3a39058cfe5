//go:build linux

package main

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

func TestUserDirNames(t *testing.T) {
	t.Parallel()
	env := func(kv ...string) func(string) string {
		return func(k string) string {
			for i := 0; i+1 < len(kv); i += 2 {
				if kv[i] == k {
					return kv[i+1]
				}
			}
			return ""
		}
	}
	for _, tc := range []struct {
		env            func(string) string
		runtime, state string
	}{
		{env("XDG_RUNTIME_DIR", "/run/user/1000", "HOME", "/home/u"), "/run/user/1000/clockwatch", "/home/u/.local/state/clockwatch"},
		{env("XDG_STATE_HOME", "/s", "HOME", "/home/u"), filepath.Join(os.TempDir(), "clockwatch-1000"), "/s/clockwatch"},
		// Relative or root: not a home of the user's.
		{env("XDG_RUNTIME_DIR", "rel", "HOME", "/"), filepath.Join(os.TempDir(), "clockwatch-1000"), ""},
	} {
		if got := userRuntimeDir(tc.env, 1000); got != tc.runtime {
			t.Errorf("runtime %q, want %q", got, tc.runtime)
		}
		if got := userStateDir(tc.env); got != tc.state {
			t.Errorf("state %q, want %q", got, tc.state)
		}
	}
}

// ownDir refuses a directory another user made first (under /tmp anyone
// may), or one others may write.
func TestOwnDir(t *testing.T) {
	t.Parallel()
	base := t.TempDir()
	mine := filepath.Join(base, "mine")
	if err := ownDir(mine, os.Geteuid()); err != nil {
		t.Errorf("a new directory: %v", err)
	}
	if st, err := os.Stat(mine); err != nil || st.Mode().Perm() != 0o700 {
		t.Errorf("made %v (%v), want mode 0700", st, err)
	}
	if err := ownDir(mine, os.Geteuid()+1); err == nil || !strings.Contains(err.Error(), "belongs to another user") {
		t.Errorf("another user's directory: %v", err)
	}
	open := filepath.Join(base, "open")
	if err := os.Mkdir(open, 0o777); err != nil {
		t.Fatal(err)
	}
	if err := os.Chmod(open, 0o777); err != nil {
		t.Fatal(err)
	}
	if err := ownDir(open, os.Geteuid()); err == nil || !strings.Contains(err.Error(), "may be written by others") {
		t.Errorf("a directory others may write: %v", err)
	}
	link := filepath.Join(base, "link")
	if err := os.Symlink(mine, link); err != nil {
		t.Fatal(err)
	}
	if err := ownDir(link, os.Geteuid()); err == nil || !strings.Contains(err.Error(), "not a directory") {
		t.Errorf("a symlink: %v", err)
	}
}

// Root keeps the system's directories; so does a configuration that names
// its own.
func TestDaemonDirsRootAndConfigured(t *testing.T) {
	t.Parallel()
	getenv := func(string) string { return "" }
	env, used, err := daemonDirs(getenv, 0, "/run/clockwatch/stepdown.sock", "")
	if err != nil || len(used) != 0 || env("RUNTIME_DIRECTORY") != "" {
		t.Errorf("root: %v %v %q", used, err, env("RUNTIME_DIRECTORY"))
	}
	env, used, err = daemonDirs(getenv, 1000, "/elsewhere/stepdown.sock", "/elsewhere")
	if err != nil || len(used) != 0 || env("RUNTIME_DIRECTORY") != "" || env("STATE_DIRECTORY") != "" {
		t.Errorf("configured paths: %v %v", used, err)
	}
}
