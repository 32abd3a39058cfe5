package socket_test

import (
	"net"
	"testing"
	"time"

	"github.com/clockwatch/clockwatch/internal/transport/socket"
	"github.com/clockwatch/clockwatch/stepdown"
)

// FuzzClientInput sends arbitrary bytes to a live server and checks that it
// keeps serving: a new subscriber still gets its hello.
func FuzzClientInput(f *testing.F) {
	for _, s := range []string{
		`{"type":"ack","seq":1}` + "\n", `{"type":"drill","hold_seconds":0.001}` + "\n", "\n\n\n", "garbage\n",
		`{"type":"drill","hold_seconds":-1}` + "\n", `{"type":"drill","step_seconds":1e400}` + "\n", "{\"type\":\"ack\"",
	} {
		f.Add([]byte(s))
	}
	cfg := testConfig(f)
	start(f, cfg, socket.Options{})
	f.Fuzz(func(t *testing.T, in []byte) {
		c, err := net.Dial("unix", cfg.Socket)
		if err != nil {
			t.Fatal(err)
		}
		c.SetWriteDeadline(time.Now().Add(time.Second))
		c.Write(in)
		c.Close()
		probe, hello := dial(t, cfg.Socket)
		probe.Close()
		if hello.Type != stepdown.TypeHello {
			t.Fatalf("server not serving after %q", in)
		}
	})
}
