package throwawayroot

import (
	"bytes"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"syscall"
)

// Snapshot is the part of the host's state a throwaway-root test must leave
// as it found it: the content of some files and the shape of some
// directory trees.
type Snapshot struct {
	// Files maps a path to its content; a missing file is recorded as absent.
	Files map[string]fileState
	// Trees maps a directory to what it holds (path, type, mode, owner); a
	// missing directory is recorded as absent.
	Trees map[string][]string
}

type fileState struct {
	exists  bool
	content []byte
}

// TakeHost records what a package test must not change on the host: dpkg's
// database, the user and group databases, every path the packages install
// (a linter that unpacks a package where its paths say, as rpmlint's cpio
// did, shows here), the directories the daemon creates, and the rpm database
// a root's rpm tools create in its home.
func TakeHost() (Snapshot, error) {
	return Take(
		[]string{"/var/lib/dpkg/status", "/etc/passwd", "/etc/group", "/etc/shadow", "/etc/gshadow",
			"/usr/bin/clockwatch", "/usr/lib/systemd/system/clockwatch.service", "/usr/lib/systemd/system/clockwatch.socket",
			"/lib/systemd/system/clockwatch.service", "/lib/systemd/system/clockwatch.socket",
			"/usr/lib/udev/rules.d/60-clockwatch-vmclock.rules", "/lib/udev/rules.d/60-clockwatch-vmclock.rules",
			"/usr/share/man/man1/clockwatch.1.gz"},
		[]string{"/etc/clockwatch", "/var/lib/clockwatch", "/run/clockwatch", "/usr/share/clockwatch",
			"/usr/share/doc/clockwatch", "/usr/share/licenses/clockwatch", "/root/.rpmdb"},
	)
}

// Take records files and trees as they are now.
func Take(files, trees []string) (Snapshot, error) {
	s := Snapshot{Files: map[string]fileState{}, Trees: map[string][]string{}}
	for _, f := range files {
		b, err := os.ReadFile(f)
		switch {
		case errors.Is(err, fs.ErrNotExist):
			s.Files[f] = fileState{}
		case err != nil:
			return Snapshot{}, fmt.Errorf("snapshot of %s: %w", f, err)
		default:
			s.Files[f] = fileState{exists: true, content: b}
		}
	}
	for _, d := range trees {
		list, err := tree(d)
		if err != nil {
			return Snapshot{}, fmt.Errorf("snapshot of %s: %w", d, err)
		}
		s.Trees[d] = list
	}
	return s, nil
}

// tree lists a directory recursively, one line per entry. Sizes and times
// are left out on purpose: a daemon running on the host rewrites its state
// file, which is not the test's doing; deleting, adding or re-owning an entry
// is.
func tree(dir string) ([]string, error) {
	var list []string
	err := filepath.WalkDir(dir, func(p string, d fs.DirEntry, err error) error {
		if errors.Is(err, fs.ErrNotExist) && p == dir {
			return fs.SkipAll
		}
		if err != nil {
			return err
		}
		info, err := d.Info()
		if err != nil {
			return err
		}
		line := fmt.Sprintf("%s %v", p, info.Mode())
		if st, ok := info.Sys().(*syscall.Stat_t); ok {
			line += fmt.Sprintf(" %d:%d", st.Uid, st.Gid)
		}
		list = append(list, line)
		return nil
	})
	if list == nil && err == nil {
		return []string{dir + " absent"}, nil
	}
	return list, err
}

// Diff lists how after differs from s, one sentence each; none when equal.
func (s Snapshot) Diff(after Snapshot) []string {
	var out []string
	for _, f := range sortedKeys(s.Files) {
		b, a := s.Files[f], after.Files[f]
		switch {
		case b.exists != a.exists:
			out = append(out, fmt.Sprintf("%s: existed before %v, after %v", f, b.exists, a.exists))
		case !bytes.Equal(b.content, a.content):
			out = append(out, fmt.Sprintf("%s changed: %s", f, describeChange(f, b.content, a.content)))
		}
	}
	for _, d := range sortedKeys(s.Trees) {
		if b, a := s.Trees[d], after.Trees[d]; !slices.Equal(b, a) {
			out = append(out, fmt.Sprintf("%s changed:\nbefore:\n  %s\nafter:\n  %s", d, strings.Join(b, "\n  "), strings.Join(a, "\n  ")))
		}
	}
	return out
}

// describeChange names what differs: the dpkg packages whose stanza changed,
// or the lines of a line-based database that were added or removed.
func describeChange(path string, before, after []byte) string {
	sep := "\n"
	if filepath.Base(path) == "status" {
		sep = "\n\n" // dpkg's status: one stanza per package
	}
	b, a := strings.Split(string(before), sep), strings.Split(string(after), sep)
	var gone, added []string
	for _, x := range b {
		if !slices.Contains(a, x) {
			gone = append(gone, firstLine(x))
		}
	}
	for _, x := range a {
		if !slices.Contains(b, x) {
			added = append(added, firstLine(x))
		}
	}
	return fmt.Sprintf("removed %q, added %q", gone, added)
}

func firstLine(s string) string {
	first, _, _ := strings.Cut(strings.TrimSpace(s), "\n")
	if strings.Contains(first, ":") && strings.HasPrefix(first, "Package:") {
		return first
	}
	// /etc/shadow lines hold password hashes: name the entry only.
	name, _, _ := strings.Cut(first, ":")
	return name
}

func sortedKeys[V any](m map[string]V) []string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	return keys
}
