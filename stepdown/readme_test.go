package stepdown_test

import (
	"go/parser"
	"go/token"
	"os"
	"regexp"
	"testing"
)

// readmeProgram is README.md's "Release your lock" program.
var readmeProgram = regexp.MustCompile("(?s)## Release your lock\n.*?```go\n(.*?)```")

// TestReadmeExample: README.md's example is a whole program, as a user copies
// it into main.go: package main with a main, importing only the standard
// library and this module. clients/clients_test.go (TestGoReadmeExample)
// builds it and runs it against a real clockwatch.
func TestReadmeExample(t *testing.T) {
	t.Parallel()
	readme, err := os.ReadFile("README.md")
	if err != nil {
		t.Fatal(err)
	}
	m := readmeProgram.FindSubmatch(readme)
	if m == nil {
		t.Fatal("README.md has no Go block under \"Release your lock\"")
	}
	f, err := parser.ParseFile(token.NewFileSet(), "main.go", m[1], parser.ImportsOnly)
	if err != nil {
		t.Fatalf("README.md's example does not parse as a file: %v", err)
	}
	if f.Name.Name != "main" {
		t.Errorf("README.md's example is package %s, want main: a program to run", f.Name.Name)
	}
	for _, imp := range f.Imports {
		if p := imp.Path.Value; regexp.MustCompile(`^"[a-z]+\.[a-z]`).MatchString(p) && p != `"github.com/clockwatch/clockwatch/stepdown"` {
			t.Errorf("README.md's example imports %s: only the standard library and this module", p)
		}
	}
	if _, err := parser.ParseFile(token.NewFileSet(), "main.go", m[1], 0); err != nil {
		t.Errorf("README.md's example: %v", err)
	}
}
