package host_test

import (
	"go/ast"
	"go/parser"
	"go/token"
	"io/fs"
	"path/filepath"
	"strings"
	"testing"
)

// readers are the functions that read the process's environment.
var readers = map[string]bool{"Getenv": true, "LookupEnv": true, "Environ": true}

// allowed read the process's environment on purpose: the CI switch of the
// tests' tools, and the harness that starts the daemon as a child with an
// environment of its own directories.
var allowed = map[string]bool{"internal/testtool": true, "internal/daemontest": true}

// TestNoEnvironmentReads checks that no package under internal/ but the
// test tools (commands aside) reads (or passes on) the process's environment: the command line
// (cmd/clockwatch) hands it to the daemon through its Options (host.Env), so
// that a test gives its own and none can write into the host's
// /run/clockwatch or /var/lib/clockwatch because a default followed a
// variable it did not set.
func TestNoEnvironmentReads(t *testing.T) {
	t.Parallel()
	root := filepath.Join("..")
	checked := 0
	err := filepath.WalkDir(root, func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if d.IsDir() && d.Name() == "testdata" {
			return filepath.SkipDir
		}
		if d.IsDir() || !strings.HasSuffix(path, ".go") || strings.HasSuffix(path, "_test.go") {
			return nil
		}
		rel, _ := filepath.Rel(root, filepath.Dir(path))
		if allowed["internal/"+filepath.ToSlash(rel)] {
			return nil
		}
		f, err := parser.ParseFile(token.NewFileSet(), path, nil, 0)
		if err != nil {
			return err
		}
		if f.Name.Name == "main" {
			return nil // a command: it is the caller that reads the environment
		}
		checked++
		ast.Inspect(f, func(n ast.Node) bool {
			sel, ok := n.(*ast.SelectorExpr)
			if !ok {
				return true
			}
			if id, ok := sel.X.(*ast.Ident); ok && id.Name == "os" && readers[sel.Sel.Name] {
				t.Errorf("%s: os.%s: take the environment from the caller (host.Env, a getenv parameter), never the process's", path, sel.Sel.Name)
			}
			return true
		})
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	if checked < 100 {
		t.Errorf("checked %d files under internal/: the walk missed them", checked)
	}
}
