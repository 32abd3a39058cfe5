package server_test

import (
	"context"
	"os"
	"strconv"
	"syscall"
	"testing"

	"github.com/clockwatch/clockwatch/internal/stepdown/server"
	"github.com/clockwatch/clockwatch/stepdown"
)

// Beside the public socket the server opens a reserved one, one ring
// closer: root and clockwatch's uid when the public socket is for a group,
// root and the group when it is for everyone. Root's tools dial it
// (Prefer), it greets like the public one, and it goes when the server
// stops.
func TestReservedSocket(t *testing.T) {
	t.Parallel()
	gid := os.Getegid()
	for _, tc := range []struct {
		mode, group string
		want        os.FileMode
		wantGID     int
	}{
		{mode: "0660", want: 0o600, wantGID: gid},
		{mode: "0666", group: strconv.Itoa(gid), want: 0o660, wantGID: gid},
		{mode: "0640", want: 0o600, wantGID: gid},
	} {
		t.Run(tc.mode, func(t *testing.T) {
			t.Parallel()
			cfg := testConfig(t)
			cfg.Mode, cfg.Group = tc.mode, tc.group
			s, _ := newServer(t, cfg, server.Options{})
			ctx, cancel := context.WithCancel(context.Background())
			done := make(chan error, 1)
			go func() { done <- s.Run(ctx) }()
			<-s.Ready()
			rpath := server.ReservedSocket(cfg.Socket)
			st, err := os.Stat(rpath)
			if err != nil {
				t.Fatal(err)
			}
			if st.Mode().Type() != os.ModeSocket || st.Mode().Perm() != tc.want {
				t.Errorf("reserved socket %s, want a socket with %04o", st.Mode(), tc.want)
			}
			if g := int(st.Sys().(*syscall.Stat_t).Gid); g != tc.wantGID {
				t.Errorf("reserved socket's group %d, want %d", g, tc.wantGID)
			}
			if got := server.Prefer(cfg.Socket); got != rpath {
				t.Errorf("Prefer(%s) = %s, want the reserved %s (the test runs as root)", cfg.Socket, got, rpath)
			}
			c, hello := dial(t, rpath)
			if hello.Version != stepdown.Version {
				t.Errorf("hello on the reserved socket: %v", hello)
			}
			c.Close()
			cancel()
			if err := <-done; err != nil {
				t.Fatal(err)
			}
			if _, err := os.Stat(rpath); !os.IsNotExist(err) {
				t.Errorf("reserved socket left behind: %v", err)
			}
			if got := server.Prefer(cfg.Socket); got != cfg.Socket {
				t.Errorf("Prefer with no reserved socket = %s, want %s", got, cfg.Socket)
			}
		})
	}
}
