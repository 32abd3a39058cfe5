package server_test

import (
	"testing"
	"time"

	"github.com/clockwatch/clockwatch/internal/stepdown/policy"
	"github.com/clockwatch/clockwatch/internal/stepdown/server"
	"github.com/clockwatch/clockwatch/stepdown"
)

// An in-process subscriber gets the events the socket clients get, and a
// subscriber that never reads does not hold the announcer up.
func TestSubscribe(t *testing.T) {
	t.Parallel()
	s := start(t, testConfig(t), server.Options{})
	events, cancel := s.Subscribe(4)
	stuck, cancelStuck := s.Subscribe(1) // never read
	defer cancelStuck()
	for range 3 { // more than stuck's buffer: the announcer must not block
		if err := s.Drill(server.DrillRequest{Reason: stepdown.ReasonStep, Hold: time.Millisecond}); err != nil {
			t.Fatal(err)
		}
		if e := receive(t, events); e.Type != stepdown.TypeStepdown || e.Reason != stepdown.ReasonStep || !e.Drill {
			t.Fatalf("event = %+v, want the drill's stepdown", e)
		}
		if st := s.Status(); st.State != stepdown.StateStepdown {
			t.Errorf("Status() when the stepdown is delivered = %+v, want stepdown already", st)
		}
		waitFor(t, "the drill's resume", func() bool { s.ProbeOK("test"); return s.Status().State == stepdown.StateOK })
		if e := receive(t, events); e.Type != stepdown.TypeResume {
			t.Fatalf("event = %+v, want the drill's resume", e)
		}
	}
	if len(stuck) != 1 {
		t.Errorf("a subscriber that never reads holds %d events, want its buffer (1) full", len(stuck))
	}
	cancel()
	cancel() // twice is harmless
	if _, ok := <-events; ok {
		t.Error("events still open after cancel")
	}
}

func receive(t *testing.T, events <-chan policy.Event) policy.Event {
	t.Helper()
	select {
	case e := <-events:
		return e
	case <-time.After(10 * time.Second):
		t.Fatal("no event within 10s")
		return policy.Event{}
	}
}
