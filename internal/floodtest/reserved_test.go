package floodtest

import (
	"testing"

	"github.com/clockwatch/clockwatch/internal/stepdown/server"
)

// The harness finds the reserved socket where the server makes it.
func TestReservedPathIsTheServers(t *testing.T) {
	t.Parallel()
	for _, p := range []string{"/run/clockwatch/stepdown.sock", "/tmp/x/sd.sock", "/tmp/x/socket"} {
		want := server.ReservedSocket(p)
		if got := reservedName(p); got != want {
			t.Errorf("%s: the harness's reserved socket %s, the server's %s", p, got, want)
		}
	}
}
