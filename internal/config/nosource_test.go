package config

import (
	"go/ast"
	"go/parser"
	"go/token"
	"path/filepath"
	"strings"
	"testing"
)

// The configuration names no source: its files import no source package
// (internal/probe/..., internal/peers) and mention no source's section or
// name in code; the sources' sections, defaults, validation and own
// thresholds come from the registry (timesources.Sections). A source that
// needs config to change to be added fails here.
func TestConfigNamesNoSource(t *testing.T) {
	t.Parallel()
	files, err := filepath.Glob("*.go")
	if err != nil {
		t.Fatal(err)
	}
	sources := []string{"chrony", "ntpd", "ptp", "sntp", "timesyncd", "vmclock", "peers", "NTPProbes", "PTP", "VMClock"}
	n := 0
	for _, name := range files {
		if strings.HasSuffix(name, "_test.go") {
			continue
		}
		n++
		fset := token.NewFileSet()
		f, err := parser.ParseFile(fset, name, nil, parser.SkipObjectResolution) // comments dropped: they may name sources
		if err != nil {
			t.Fatal(err)
		}
		for _, imp := range f.Imports {
			p := strings.Trim(imp.Path.Value, `"`)
			if strings.Contains(p, "/internal/probe") || strings.HasSuffix(p, "/internal/peers") {
				t.Errorf("%s imports %s, a source", name, p)
			}
		}
		for _, id := range identsAndStrings(f) {
			for _, s := range sources {
				if id == s || strings.HasPrefix(id, s+".") {
					t.Errorf("%s names the source %q in code", name, id)
				}
			}
		}
	}
	if n < 3 {
		t.Fatalf("only %d files read", n)
	}
}

// identsAndStrings returns every identifier and string literal of f.
func identsAndStrings(f *ast.File) []string {
	var out []string
	ast.Inspect(f, func(n ast.Node) bool {
		switch n := n.(type) {
		case *ast.Ident:
			out = append(out, n.Name)
		case *ast.BasicLit:
			if n.Kind == token.STRING {
				out = append(out, strings.Trim(n.Value, "`\""))
			}
		}
		return true
	})
	return out
}
