package socket_test

import (
	"strings"
	"testing"
	"time"

	"github.com/clockwatch/clockwatch/internal/transport/socket"
	"github.com/clockwatch/clockwatch/stepdown"
)

// TestLinesAcrossReads: the input poller reads what a socket has, whatever
// its cut: a line in many writes, many lines in one, a line of exactly
// stepdown.MaxLineBytes, and one byte more.
func TestLinesAcrossReads(t *testing.T) {
	t.Parallel()
	unknown := `{"type":"nonsense"}`
	padded := func(n int) string { return unknown + strings.Repeat(" ", n-len(unknown)-1) + "\n" }
	for _, tc := range []struct {
		name   string
		writes []string
		want   []string // the error codes the client gets back
	}{
		{"a byte a write", strings.Split(unknown+"\n", ""), []string{stepdown.CodeUnknownType}},
		{"three lines in one write", []string{strings.Repeat(unknown+"\n", 3)}, []string{stepdown.CodeUnknownType, stepdown.CodeUnknownType, stepdown.CodeUnknownType}},
		{"a line and a half, then the rest", []string{unknown + "\n" + unknown[:7], unknown[7:] + "\n"}, []string{stepdown.CodeUnknownType, stepdown.CodeUnknownType}},
		{"exactly MaxLineBytes", []string{padded(stepdown.MaxLineBytes)}, []string{stepdown.CodeUnknownType}},
		{"exactly MaxLineBytes in two writes", []string{padded(stepdown.MaxLineBytes)[:3000], padded(stepdown.MaxLineBytes)[3000:]}, []string{stepdown.CodeUnknownType}},
		{"one byte more", []string{padded(stepdown.MaxLineBytes + 1)}, []string{stepdown.CodeLineTooLong}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			cfg := testConfig(t)
			cfg.Heartbeat = time.Hour
			start(t, cfg, socket.Options{})
			raw, c := rawDial(t, cfg.Socket)
			for _, w := range tc.writes {
				if _, err := raw.Write([]byte(w)); err != nil {
					t.Fatal(err)
				}
				time.Sleep(time.Millisecond) // separate reads, most of the time
			}
			for i, code := range tc.want {
				if m := next(t, c); m.Type != stepdown.TypeError || m.Code != code {
					t.Fatalf("message %d: %v, want an error %q", i, m, code)
				}
			}
		})
	}
}
