package daemon

import (
	"testing"

	"github.com/clockwatch/clockwatch/internal/clockbound"
)

func TestSegmentPath(t *testing.T) {
	t.Parallel()
	env := func(m map[string]string) func(string) string { return func(k string) string { return m[k] } }
	def := clockbound.DefaultConfig()
	if got := segmentPath(def, env(nil)); got != clockbound.DefaultPath {
		t.Errorf("default without RUNTIME_DIRECTORY = %s", got)
	}
	if got := segmentPath(def, env(map[string]string{"RUNTIME_DIRECTORY": "/run/cw"})); got != "/run/cw/clockbound/shm0" {
		t.Errorf("default under RUNTIME_DIRECTORY = %s, want /run/cw/clockbound/shm0", got)
	}
	set := def
	set.Path = "/srv/shm0"
	if got := segmentPath(set, env(map[string]string{"RUNTIME_DIRECTORY": "/run/cw"})); got != "/srv/shm0" {
		t.Errorf("configured path = %s, want /srv/shm0 whatever RUNTIME_DIRECTORY says", got)
	}
}
