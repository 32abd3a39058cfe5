package socket_test

import (
	"bytes"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"go.yaml.in/yaml/v3"

	"github.com/clockwatch/clockwatch/internal/transport/socket"
)

func TestDefaultConfigIsValid(t *testing.T) {
	t.Parallel()
	if err := socket.DefaultConfig().Validate(); err != nil {
		t.Fatal(err)
	}
}

// TestConfigYAML reads the socket's keys; the whole section, the policy's
// hold_down and triggers included, is read by package config
// (TestStepdownSection).
func TestConfigYAML(t *testing.T) {
	t.Parallel()
	const doc = `
socket: /run/clockwatch/other.sock
mode: "0600"
group: root
heartbeat: 500ms
max_clients: 100
queue_size: 16
allow_uids: [1000, 1001]
allow_gids: [50]
drill_uids: [1000]
`
	cfg := socket.DefaultConfig()
	dec := yaml.NewDecoder(strings.NewReader(doc))
	dec.KnownFields(true)
	if err := dec.Decode(&cfg); err != nil {
		t.Fatal(err)
	}
	if err := cfg.Validate(); err != nil {
		t.Fatal(err)
	}
	want := socket.DefaultConfig()
	want.Socket, want.Mode, want.Group = "/run/clockwatch/other.sock", "0600", "root"
	want.Heartbeat, want.MaxClients, want.QueueSize = 500*time.Millisecond, 100, 16
	want.AllowUIDs, want.AllowGIDs, want.DrillUIDs = []uint32{1000, 1001}, []uint32{50}, []uint32{1000}
	if diff := cmp.Diff(want, cfg); diff != "" {
		t.Errorf("(-want +got):\n%s", diff)
	}
	var out bytes.Buffer
	if err := yaml.NewEncoder(&out).Encode(cfg); err != nil {
		t.Fatal(err)
	}
}

func TestConfigValidate(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name string
		edit func(*socket.Config)
		want string
	}{
		{"relative socket", func(c *socket.Config) { c.Socket = "stepdown.sock" }, `stepdown.socket: must be an absolute path, got "stepdown.sock"`},
		{"long socket", func(c *socket.Config) { c.Socket = "/" + strings.Repeat("a", 120) }, "stepdown.socket: must be at most 107 bytes long (a unix socket path), got 121"},
		{"mode", func(c *socket.Config) { c.Mode = "rw-rw----" }, `stepdown.mode: must be octal permission bits like "0660", got "rw-rw----"`},
		{"heartbeat", func(c *socket.Config) { c.Heartbeat = 0 }, "stepdown.heartbeat: must be between 10ms and 1h0m0s (each beat is a write to every client), got 0s"},
		{"heartbeat 1ns", func(c *socket.Config) { c.Heartbeat = time.Nanosecond }, "stepdown.heartbeat: must be between 10ms and 1h0m0s (each beat is a write to every client), got 1ns"},
		{"max_clients", func(c *socket.Config) { c.MaxClients = 0 }, "stepdown.max_clients: must be between 1 and 65536 (each is a file descriptor), got 0"},
		{"max_clients a million", func(c *socket.Config) { c.MaxClients = 1 << 20 }, "stepdown.max_clients: must be between 1 and 65536 (each is a file descriptor), got 1048576"},
		{"max_clients_per_uid", func(c *socket.Config) { c.MaxClientsPerUID = 0 }, "stepdown.max_clients_per_uid: must be between 1 and 65536, got 0"},
		{"queue_size", func(c *socket.Config) { c.QueueSize = -1 }, "stepdown.queue_size: must be between 1 and 4096 (messages held for each subscriber that falls behind), got -1"},
		{"queue_size 2e9", func(c *socket.Config) { c.QueueSize = 2000000000 }, "stepdown.queue_size: must be between 1 and 4096 (messages held for each subscriber that falls behind), got 2000000000"},
		{"queues together", func(c *socket.Config) { c.QueueSize = 4096; c.MaxClients = 4096 }, "stepdown.queue_size: queue_size × max_clients must be at most 4194304 (about 96 MiB of queues), got 4096 × 4096"},
		{"write_timeout", func(c *socket.Config) { c.WriteTimeout = 0 }, "stepdown.write_timeout: must be between 1ms and 1m0s, got 0s"},
		{"max_drill_hold", func(c *socket.Config) { c.MaxDrillHold = 0 }, "stepdown.max_drill_hold: must be between 1ms and 24h0m0s, got 0s"},
		{"unknown group", func(c *socket.Config) { c.Group = "no-such-group-clockwatch" }, "stepdown.group: group: unknown group no-such-group-clockwatch (name an existing group or a numeric gid)"},
		{"relative reserved_socket", func(c *socket.Config) { c.ReservedSocket = "r.sock" }, `stepdown.reserved_socket: must be an absolute path or "none", got "r.sock"`},
		{"long reserved_socket", func(c *socket.Config) { c.ReservedSocket = "/" + strings.Repeat("a", 110) }, "stepdown.reserved_socket: must be at most 107 bytes long (a unix socket path), got 111"},
		{"reserved_socket is socket", func(c *socket.Config) { c.ReservedSocket = c.Socket }, "stepdown.reserved_socket: must not be stepdown.socket, /run/clockwatch/stepdown.sock"},
		{"unknown reserved_group", func(c *socket.Config) { c.ReservedGroup = "no-such-group-clockwatch" }, "stepdown.reserved_group: group: unknown group no-such-group-clockwatch (name an existing group or a numeric gid)"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			cfg := socket.DefaultConfig()
			tc.edit(&cfg)
			err := cfg.Validate()
			if err == nil || err.Error() != tc.want {
				t.Errorf("got %v\nwant %s", err, tc.want)
			}
		})
	}
}

func TestResolveSocket(t *testing.T) {
	t.Parallel()
	env := func(v string) func(string) string {
		return func(k string) string {
			if k == "RUNTIME_DIRECTORY" {
				return v
			}
			return ""
		}
	}
	for _, tc := range []struct {
		name, socket, runtimeDir, want string
	}{
		{"default without systemd", socket.DefaultSocket, "", socket.DefaultSocket},
		{"default under RuntimeDirectory=", socket.DefaultSocket, "/run/cw", "/run/cw/stepdown.sock"},
		{"first of several runtime directories", socket.DefaultSocket, "/run/a:/run/b", "/run/a/stepdown.sock"},
		{"configured path stays", "/srv/s.sock", "/run/cw", "/srv/s.sock"},
	} {
		c := socket.DefaultConfig()
		c.Socket = tc.socket
		if got := c.Resolve(env(tc.runtimeDir)).Socket; got != tc.want {
			t.Errorf("%s: Resolve gives %q, want %q", tc.name, got, tc.want)
		}
	}
}
