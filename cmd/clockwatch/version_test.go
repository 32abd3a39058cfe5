//go:build linux

package main

import (
	"runtime/debug"
	"testing"
)

// A binary the build did not stamp says the module version `go install
// ...@vX.Y.Z` recorded, and "dev" when built in a checkout.
func TestModuleVersion(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		recorded string
		ok       bool
		want     string
	}{
		{"v0.1.0", true, "0.1.0"},
		{"v0.1.1-0.20261202061500-23edd8305578", true, "0.1.1-0.20261202061500-23edd8305578"},
		{"(devel)", true, "dev"},
		{"", false, "dev"},
	} {
		read := func() (*debug.BuildInfo, bool) {
			return &debug.BuildInfo{Main: debug.Module{Version: tc.recorded}}, tc.ok
		}
		if got := moduleVersion(read); got != tc.want {
			t.Errorf("recorded %q: version %q, want %q", tc.recorded, got, tc.want)
		}
	}
}
