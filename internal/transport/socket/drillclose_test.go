package socket_test

import (
	"net"
	"testing"
	"time"

	"github.com/clockwatch/clockwatch/internal/transport/socket"
	"github.com/clockwatch/clockwatch/stepdown"
)

// TestDrillThenClose: a client that sends a drill and closes at once,
// before reading its hello (as `echo '{"type":"drill"}' | socat - UNIX:…`
// may), still has its drill run: the hello's write finds the peer gone,
// and what the peer sent before it went is acted on. Found by the Go
// client README's example (clients.TestGoReadmeExample) once a subscriber
// had no reader goroutine of its own.
func TestDrillThenClose(t *testing.T) {
	t.Parallel()
	cfg := testConfig(t)
	cfg.Heartbeat = time.Hour
	start(t, cfg, socket.Options{})
	watcher, _ := dial(t, cfg.Socket)
	for i := range 20 {
		raw, err := net.Dial("unix", cfg.Socket)
		if err != nil {
			t.Fatal(err)
		}
		b := stepdown.Message{Type: stepdown.TypeDrill, Reason: stepdown.ReasonStep, HoldSeconds: 0.001}.AppendLine(nil)
		if _, err := raw.Write(b); err != nil {
			t.Fatal(err)
		}
		raw.Close()
		watcher.SetReadDeadline(time.Now().Add(10 * time.Second))
		for {
			m, err := watcher.Read()
			if err != nil {
				t.Fatalf("drill %d sent and closed at once: the watcher heard no stepdown: %v", i+1, err)
			}
			if m.Type == stepdown.TypeStepdown && m.Drill {
				break
			}
		}
		// Its resume, before the next drill.
		for {
			m, err := watcher.Read()
			if err != nil {
				t.Fatalf("drill %d: no resume: %v", i+1, err)
			}
			if m.Type == stepdown.TypeResume {
				break
			}
		}
	}
}
