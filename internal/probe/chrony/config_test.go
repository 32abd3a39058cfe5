package chrony

import (
	"testing"
	"time"

	"go.yaml.in/yaml/v3"
)

func TestConfigValidate(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name    string
		yaml    string
		wantErr string
	}{
		{name: "defaults"},
		{name: "unix path", yaml: "address: /run/chrony/chronyd.sock"},
		{name: "udp", yaml: "address: \"[::1]:323\"\npoll_interval: 100ms\ntimeout: 50ms"},
		{name: "empty address", yaml: `address: ""`, wantErr: `chrony.address: must be "auto", a unix socket path or host:port, got ""`},
		{name: "relative path", yaml: "address: chronyd.sock", wantErr: `chrony.address: must be "auto", an absolute unix socket path or host:port, got "chronyd.sock"`},
		{name: "bad durations", yaml: "poll_interval: -1s\ntimeout: 0s", wantErr: "chrony.poll_interval: must be between 100ms and 1h (each poll is a round of requests to chronyd), got -1s\nchrony.timeout: must be at least 1ms, got 0s"},
		{name: "bad role", yaml: "role: judge", wantErr: `chrony.role: must be "authoritative" or "second_opinion", got "judge"`},
		{name: "timeout above interval", yaml: "poll_interval: 1s\ntimeout: 2s", wantErr: "chrony.timeout: must not exceed chrony.poll_interval (1s), got 2s"},
		{name: "no pid file", yaml: `pid_file: ""`},
		{name: "relative pid file", yaml: "pid_file: chronyd.pid", wantErr: `chrony.pid_file: must be an absolute path or empty (no watch), got "chronyd.pid"`},
		{name: "bad watched interval", yaml: "watched_max_poll_interval: 2h", wantErr: "chrony.watched_max_poll_interval: must be between 0 (chrony.max_poll_interval) and 1h, got 2h0m0s"},
		{name: "relative reply dir", yaml: "reply_socket_dir: run", wantErr: `chrony.reply_socket_dir: must be an absolute path, got "run"`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			c := DefaultConfig()
			if err := yaml.Unmarshal([]byte(tc.yaml), &c); err != nil {
				t.Fatal(err)
			}
			err := c.Validate()
			got := ""
			if err != nil {
				got = err.Error()
			}
			if got != tc.wantErr {
				t.Errorf("Validate() = %q, want %q", got, tc.wantErr)
			}
		})
	}
	if c := DefaultConfig(); c.PollInterval != time.Second || c.Address != AddressAuto || c.DNSLookups {
		t.Errorf("DefaultConfig() = %+v, want 1s polls, auto address, no DNS", c)
	}
}

// TestLocal: the pid file is read only for a chronyd on this host.
func TestLocal(t *testing.T) {
	t.Parallel()
	for addr, want := range map[string]bool{
		AddressAuto: true, "/run/chrony/chronyd.sock": true, "127.0.0.1:323": true, "[::1]:323": true,
		"localhost:323": true, "192.0.2.1:323": false, "ntp.example:323": false,
	} {
		if got := (Config{Address: addr}).local(); got != want {
			t.Errorf("local() for %q = %v, want %v", addr, got, want)
		}
	}
}
