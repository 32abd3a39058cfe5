//go:build linux

package main

import (
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"
)

// internalPath is a path under internal/ as docs/architecture.md names one
// (a package, a file, a directory); a trailing "." or "/" is the sentence's.
var internalPath = regexp.MustCompile(`internal/[A-Za-z0-9_./-]*[A-Za-z0-9_]`)

// eventPathHop is a package path in the event path's "after:" lines, relative
// to internal/ (daemon/feed.go, transport/socket).
var eventPathHop = regexp.MustCompile(`\b[a-z]+/[a-z][a-z0-9_./]*[a-z0-9]`)

// missingPaths returns the paths doc names that do not exist under root:
// every internal/... path (the placeholder NAME of "Adding a source" aside,
// and "internal/probe/..." read as internal/probe), and every package of the
// event path's "after:" block, which names them relative to internal/. It
// also returns how many it checked.
func missingPaths(root, doc string) (missing []string, checked int) {
	var paths []string
	for _, p := range internalPath.FindAllString(doc, -1) {
		p = strings.TrimRight(p, "./")
		if !strings.Contains(p, "NAME") {
			paths = append(paths, p)
		}
	}
	if _, after, ok := strings.Cut(doc, "\nafter:"); ok {
		block, _, _ := strings.Cut(after, "```")
		for _, p := range eventPathHop.FindAllString(block, -1) {
			paths = append(paths, "internal/"+p)
		}
	}
	slices.Sort(paths)
	paths = slices.Compact(paths)
	for _, p := range paths {
		if _, err := os.Stat(filepath.Join(root, p)); err != nil {
			missing = append(missing, p)
		}
	}
	return missing, len(paths)
}

// TestArchitecturePathsExist: every package and file docs/architecture.md
// names under internal/ (its package map, its event path, its prose) exists,
// so that a move leaves no stale path behind.
func TestArchitecturePathsExist(t *testing.T) {
	t.Parallel()
	doc, err := os.ReadFile("../../docs/architecture.md")
	if err != nil {
		t.Fatal(err)
	}
	missing, checked := missingPaths("../..", string(doc))
	for _, p := range missing {
		t.Errorf("docs/architecture.md names %s, which does not exist", p)
	}
	if checked < 20 {
		t.Errorf("docs/architecture.md: only %d internal/ paths found; the pattern misses them", checked)
	}
	// The check itself sees a stale path, in prose and in the event path.
	stale := "see `internal/clockbound/publisher.go`.\n```\nafter: x ─► transport/nosuch ─► y\n```\n"
	if got, _ := missingPaths("../..", stale); !slices.Equal(got, []string{"internal/clockbound/publisher.go", "internal/transport/nosuch"}) {
		t.Errorf("missingPaths of a doc with two stale paths = %q, want both", got)
	}
}
