package host

import (
	"testing"

	"github.com/google/go-cmp/cmp"
)

func TestActivated(t *testing.T) {
	t.Parallel()
	env := func(kv ...string) func(string) string {
		m := map[string]string{}
		for i := 0; i+1 < len(kv); i += 2 {
			m[kv[i]] = kv[i+1]
		}
		return func(k string) string { return m[k] }
	}
	for _, tc := range []struct {
		name   string
		getenv func(string) string
		want   []Socket
	}{
		{"no activation", env(), nil},
		{"for another process", env("LISTEN_PID", "7", "LISTEN_FDS", "1"), nil},
		{"no count", env("LISTEN_PID", "42", "LISTEN_FDS", "x"), nil},
		{"two, named", env("LISTEN_PID", "42", "LISTEN_FDS", "2", "LISTEN_FDNAMES", "http:stepdown"),
			[]Socket{{3, "http"}, {4, "stepdown"}}},
		{"more sockets than names", env("LISTEN_PID", "42", "LISTEN_FDS", "2", "LISTEN_FDNAMES", "stepdown"),
			[]Socket{{3, "stepdown"}, {4, ""}}},
	} {
		if diff := cmp.Diff(tc.want, Activated(tc.getenv, 42)); diff != "" {
			t.Errorf("%s: Activated (-want +got):\n%s", tc.name, diff)
		}
	}
}

func TestBootID(t *testing.T) {
	t.Parallel()
	a, err := BootID()
	if err != nil {
		t.Fatal(err)
	}
	if b, _ := BootID(); len(a) != 36 || a != b {
		t.Errorf("BootID() = %q then %q, want one UUID", a, b)
	}
}
