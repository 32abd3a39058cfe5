package stepdown_test

import (
	"os"
	"strings"
	"testing"
)

// TestReadmeExample keeps README.md's "release your lock" the code that
// compiles in example_test.go (releaseYourLock). Subscribe, WaitOK, Guard and
// Ack against a real server are internal/stepdown/server's client_test.go.
func TestReadmeExample(t *testing.T) {
	t.Parallel()
	src, err := os.ReadFile("example_test.go")
	if err != nil {
		t.Fatal(err)
	}
	_, code, _ := strings.Cut(string(src), "\t// BEGIN release your lock (README.md)\n")
	code, _, _ = strings.Cut(code, "\t// END release your lock")
	var lines []string
	for _, l := range strings.SplitAfter(code, "\n") {
		lines = append(lines, strings.TrimPrefix(l, "\t"))
	}
	code = strings.Join(lines, "")
	readme, err := os.ReadFile("README.md")
	if err != nil {
		t.Fatal(err)
	}
	if code == "" || !strings.Contains(string(readme), "```go\n"+code+"```") {
		t.Errorf("README.md does not show releaseYourLock's body as in example_test.go:\n%s", code)
	}
}
