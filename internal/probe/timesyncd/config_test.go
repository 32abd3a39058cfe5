package timesyncd

import (
	"testing"
	"time"
)

func TestConfigValidate(t *testing.T) {
	t.Parallel()
	if err := DefaultConfig().Validate(); err != nil {
		t.Fatalf("defaults: %v", err)
	}
	for _, tc := range []struct {
		name string
		edit func(*Config)
		want string
	}{
		{"mode", func(c *Config) { c.Mode = "true" }, `timesyncd.mode: must be auto, on or off, got "true"`},
		{"address", func(c *Config) { c.Address = "/run/dbus/system_bus_socket" }, `timesyncd.address: must be "system" or a D-Bus address unix:path=/absolute/path, got "/run/dbus/system_bus_socket"`},
		{"relative path", func(c *Config) { c.Address = "unix:path=bus" }, `timesyncd.address: must be "system" or a D-Bus address unix:path=/absolute/path, got "unix:path=bus"`},
		{"poll", func(c *Config) { c.PollInterval = 0 }, "timesyncd.poll_interval: must be between 100ms and 1h (each poll is a D-Bus call), got 0s"},
		{"timeout", func(c *Config) { c.Timeout = 6 * time.Second }, "timesyncd.timeout: must not exceed timesyncd.poll_interval (5s), got 6s"},
	} {
		c := DefaultConfig()
		tc.edit(&c)
		if err := c.Validate(); err == nil || err.Error() != tc.want {
			t.Errorf("%s: Validate() = %v, want %q", tc.name, err, tc.want)
		}
	}
}

func TestSocketPath(t *testing.T) {
	t.Parallel()
	env := func(v string) func(string) string { return func(string) string { return v } }
	for _, tc := range []struct {
		address, env, want string
	}{
		{"system", "", "/run/dbus/system_bus_socket"},
		{"system", "unix:path=/var/run/dbus/system_bus_socket", "/var/run/dbus/system_bus_socket"},
		{"system", "unix:abstract=x;unix:path=/tmp/b,guid=1234", "/tmp/b"},
		{"unix:path=/tmp/bus", "unix:path=/elsewhere", "/tmp/bus"},
	} {
		got, err := socketPath(tc.address, env(tc.env))
		if err != nil || got != tc.want {
			t.Errorf("socketPath(%q) with $DBUS_SYSTEM_BUS_ADDRESS=%q = %q, %v; want %q", tc.address, tc.env, got, err, tc.want)
		}
	}
	if _, err := socketPath("system", env("tcp:host=x,port=1")); err == nil {
		t.Error("a TCP system bus address was accepted")
	}
}
