package daemon

import (
	"errors"
	"testing"
	"time"

	"github.com/clockwatch/clockwatch/internal/clockbound"
	"github.com/clockwatch/clockwatch/probe/chrony"
	"github.com/clockwatch/clockwatch/timesource"
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

func TestChronyReading(t *testing.T) {
	t.Parallel()
	at := time.Now()
	got := chronyReading(chrony.Status{Valid: true, Up: false, Err: errors.New("gone"), SystemOffset: -0.002, Leap: chrony.LeapInsertSecond,
		Synchronised: true, ErrorBound: 0.0035, LastSuccess: at})
	want := timesource.Reading{Source: "chrony", Role: timesource.Authoritative, Found: true, Up: false, HasData: true, Synchronized: true,
		Offset: -2 * time.Millisecond, ErrorBound: 3500 * time.Microsecond, Leap: timesource.LeapInsert, LastSuccess: at}
	got.Err = nil
	if got != want {
		t.Errorf("chronyReading() = %+v\nwant %+v", got, want)
	}
	if r := chronyReading(chrony.Status{Err: errors.New("no socket")}); r.Found || r.HasData || r.Err == nil {
		t.Errorf("chronyReading() of a chronyd never reached = %+v, want not found, no data, the error", r)
	}
}
