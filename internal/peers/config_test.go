package peers

import (
	"net/netip"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
)

func TestConfig(t *testing.T) {
	t.Parallel()
	d := DefaultConfig()
	if err := d.Validate(); err != nil {
		t.Fatalf("the defaults: %v", err)
	}
	if d.Enabled() || d.Port() != 9847 || d.Burst() != 16 {
		t.Errorf("defaults: enabled %v, port %d, burst %d", d.Enabled(), d.Port(), d.Burst())
	}
	for _, c := range []Config{{Static: []string{"a:1"}}, {DNS: "x"}, {Kubernetes: true}} {
		if !c.Enabled() {
			t.Errorf("%+v not enabled", c)
		}
	}
	d.Allow = []string{"10.0.0.0/8", "192.0.2.7", "::ffff:192.0.2.8", "fd00::/8", "10.1.2.3/8"}
	want := []netip.Prefix{netip.MustParsePrefix("10.0.0.0/8"), netip.MustParsePrefix("192.0.2.7/32"),
		netip.MustParsePrefix("192.0.2.8/32"), netip.MustParsePrefix("fd00::/8"), netip.MustParsePrefix("10.0.0.0/8")}
	if diff := cmp.Diff(want, d.Prefixes(), cmp.Comparer(func(a, b netip.Prefix) bool { return a == b })); diff != "" {
		t.Errorf("Prefixes (-want +got):\n%s", diff)
	}
	// The key file is read by Validate, and the key id must be in it.
	dir := t.TempDir()
	path := filepath.Join(dir, "peers.keys")
	if err := os.WriteFile(path, []byte("1 AES128 HEX:000102030405060708090a0b0c0d0e0f\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	c := DefaultConfig()
	c.KeyFile, c.KeyID = path, 1
	if err := c.Validate(); err != nil {
		t.Error(err)
	}
	if ks, k, err := c.Keys(); err != nil || len(ks) != 1 || k.ID != 1 {
		t.Errorf("Keys: %v %v %v", ks, k, err)
	}
	c.KeyID = 2
	if err := c.Validate(); err == nil || !strings.Contains(err.Error(), "peers.key_id: key 2 is not in "+path) {
		t.Errorf("a key id not in the file: %v", err)
	}
}
