package stepdown_test

import (
	"errors"
	"os"
	"os/exec"
	"strings"
	"testing"
)

// TestStandardLibraryOnly keeps applications free of clockwatch's
// dependencies: the client package may import only the standard library.
func TestStandardLibraryOnly(t *testing.T) {
	t.Parallel()
	// Only stdout: stderr may have "go: downloading" lines.
	out, err := exec.Command("go", "list", "-deps", "-f", "{{if not .Standard}}{{.ImportPath}}{{end}}", ".").Output()
	if err != nil {
		var exit *exec.ExitError
		if errors.As(err, &exit) {
			t.Fatalf("go list: %v\n%s", err, exit.Stderr)
		}
		t.Fatalf("go list: %v", err)
	}
	if got := strings.Fields(string(out)); len(got) != 1 || got[0] != "github.com/clockwatch/clockwatch/stepdown" {
		t.Errorf("non-standard dependencies: %v", got)
	}
}

// TestOwnModule keeps the client a module of its own that requires nothing,
// so that an application's go.mod gains no module of clockwatch's daemon.
func TestOwnModule(t *testing.T) {
	t.Parallel()
	b, err := os.ReadFile("go.mod")
	if err != nil {
		t.Fatal(err)
	}
	mod := string(b)
	if !strings.Contains(mod, "module github.com/clockwatch/clockwatch/stepdown\n") || strings.Contains(mod, "require") {
		t.Errorf("stepdown/go.mod must declare the module github.com/clockwatch/clockwatch/stepdown and require nothing:\n%s", mod)
	}
}
