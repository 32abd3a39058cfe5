package stepdown_test

import (
	"context"
	"errors"
	"net"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/clockwatch/clockwatch/stepdown"
)

func TestReservedPath(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct{ path, want string }{
		{"/run/clockwatch/stepdown.sock", "/run/clockwatch/stepdown.reserved.sock"},
		{"/tmp/x/cw.sock", "/tmp/x/cw.reserved.sock"},
		{"/tmp/x/socket", "/tmp/x/socket.reserved"},
		{"/tmp/x.sock/s", "/tmp/x.sock/s.reserved"},
	} {
		if got := stepdown.ReservedPath(tc.path); got != tc.want {
			t.Errorf("ReservedPath(%q) = %q, want %q", tc.path, got, tc.want)
		}
	}
}

// TestDialPrefersReserved: Dial connects to the reserved socket when it is
// served, and to the stepdown socket when the reserved one is absent or
// not served (a stale file: clockwatch restarting under socket
// activation).
func TestDialPrefersReserved(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name     string
		reserved string // "listen", "absent" or "stale"
		want     string // which listener gets the connection
	}{
		{"served", "listen", "reserved"},
		{"absent", "absent", "public"},
		{"stale", "stale", "public"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			dir := t.TempDir()
			public := filepath.Join(dir, "s.sock")
			got := make(chan string, 2)
			listen := func(name, path string) {
				l, err := net.Listen("unix", path)
				if err != nil {
					t.Fatal(err)
				}
				t.Cleanup(func() { l.Close() })
				go func() {
					if c, err := l.Accept(); err == nil {
						got <- name
						c.Close()
					}
				}()
			}
			listen("public", public)
			switch tc.reserved {
			case "listen":
				listen("reserved", stepdown.ReservedPath(public))
			case "stale":
				l, err := net.Listen("unix", stepdown.ReservedPath(public))
				if err != nil {
					t.Fatal(err)
				}
				l.(*net.UnixListener).SetUnlinkOnClose(false)
				l.Close()
			}
			ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
			defer cancel()
			c, err := stepdown.Dial(ctx, public)
			if err != nil {
				t.Fatal(err)
			}
			defer c.Close()
			select {
			case name := <-got:
				if name != tc.want {
					t.Errorf("connected to the %s socket, want the %s one", name, tc.want)
				}
			case <-ctx.Done():
				t.Fatal("no listener accepted")
			}
		})
	}
}

// TestDialNamesThePublicSocket: when neither socket answers, the error is
// the stepdown socket's, not the reserved one's.
func TestDialNamesThePublicSocket(t *testing.T) {
	t.Parallel()
	public := filepath.Join(t.TempDir(), "s.sock")
	_, err := stepdown.Dial(context.Background(), public)
	if err == nil || !strings.Contains(err.Error(), public) || strings.Contains(err.Error(), "reserved") || !errors.Is(err, os.ErrNotExist) {
		t.Errorf("Dial of a missing socket: %v, want an error naming %s that is ENOENT", err, public)
	}
}
