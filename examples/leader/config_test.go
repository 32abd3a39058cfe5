package leader

import (
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
)

func TestConfigValidate(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name   string
		modify func(*Config)
		want   string
	}{
		{name: "defaults", modify: func(*Config) {}},
		{name: "ttl not whole seconds", modify: func(c *Config) { c.TTL, c.KeepAlive = 1500*time.Millisecond, 500*time.Millisecond },
			want: "ttl: must be a whole number of seconds, at least 1s, got 1.5s"},
		{name: "keepalive over a third of the ttl", modify: func(c *Config) { c.KeepAlive = 6 * time.Second },
			want: "keepalive: must be at most a third of ttl (15s), got 6s"},
		{name: "unknown lease clock", modify: func(c *Config) { c.LeaseClock = "sundial" },
			want: `lease_clock: must be "wall" or "monotonic", got "sundial"`},
		{name: "several", modify: func(c *Config) { c.Name, c.Entries = "", 0 },
			want: "name: must not be empty\nentries: must be at least 1, got 0"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			c := DefaultConfig()
			tt.modify(&c)
			got := ""
			if err := c.Validate(); err != nil {
				got = err.Error()
			}
			if diff := cmp.Diff(tt.want, got); diff != "" {
				t.Errorf("Validate() mismatch (-want +got):\n%s", diff)
			}
		})
	}
}
