package floodtest

import (
	"testing"
	"time"

	"github.com/clockwatch/clockwatch/internal/stepdown/server"
)

// The harness finds the reserved socket where the server makes it.
func TestReservedPathIsTheServers(t *testing.T) {
	t.Parallel()
	for _, p := range []string{"/run/clockwatch/stepdown.sock", "/tmp/x/sd.sock", "/tmp/x/socket"} {
		want := server.ReservedSocket(p)
		if got := reservedName(p); got != want {
			t.Errorf("%s: the harness's reserved socket %s, the server's %s", p, got, want)
		}
	}
}

// Percentiles are nearest-rank.
func TestSummarize(t *testing.T) {
	t.Parallel()
	var ds []time.Duration
	for i := 100; i >= 1; i-- {
		ds = append(ds, time.Duration(i)*time.Millisecond)
	}
	got := summarize(ds)
	want := Stats{N: 100, P50: 50 * time.Millisecond, P90: 90 * time.Millisecond, P99: 99 * time.Millisecond, Max: 100 * time.Millisecond}
	if got != want {
		t.Errorf("summarize(1..100 ms) = %+v, want %+v", got, want)
	}
	if got := summarize(nil); got != (Stats{}) {
		t.Errorf("summarize(nil) = %+v", got)
	}
}
