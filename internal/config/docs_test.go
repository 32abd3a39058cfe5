package config

import (
	"os"
	"strings"
	"testing"
)

// Every YAML example in docs/configuration.md is a valid configuration:
// what the documentation shows a user to write is read, the older
// spellings it still shows included.
func TestDocumentedExamplesParse(t *testing.T) {
	t.Parallel()
	data, err := os.ReadFile("../../docs/configuration.md")
	if err != nil {
		t.Fatal(err)
	}
	n := 0
	for _, block := range strings.Split(string(data), "```yaml\n")[1:] {
		example, _, ok := strings.Cut(block, "```")
		if !ok {
			t.Fatalf("an unclosed yaml block: %.60q", block)
		}
		n++
		_, err := Parse([]byte(example), "docs/configuration.md example")
		if err != nil && strings.Contains(err.Error(), "peers.key_file: open") && strings.Count(err.Error(), "\n") == 0 {
			continue // the example's key file is the reader's: Validate reads it, and it is not on this host
		}
		if err != nil {
			t.Errorf("example %d does not parse:\n%s\n%v", n, example, err)
		}
	}
	if n < 5 {
		t.Errorf("only %d yaml examples found", n)
	}
}
