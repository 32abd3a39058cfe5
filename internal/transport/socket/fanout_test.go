package socket_test

import (
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/clockwatch/clockwatch/internal/transport/socket"
	"github.com/clockwatch/clockwatch/stepdown"
)

// TestNextAnnouncementDoesNotWaitForTheFanOut: while an announcement's
// writes to the clients of other uids are held up (the fan-out stuck before
// its first slice, as a 2,000-subscriber fan-out takes 5-10 ms), the next
// announcement still reaches root at once; the other client then gets both
// in order, and no heartbeat overtakes them.
func TestNextAnnouncementDoesNotWaitForTheFanOut(t *testing.T) {
	t.Parallel()
	cfg := testConfig(t)
	var calls atomic.Int32
	s, ann := newServer(t, cfg, socket.Options{PeerCred: func(fd int) (socket.Cred, error) {
		c, err := socket.PeerCred(fd)
		if calls.Add(1) > 1 {
			c.UID = 1000 // every client after the first
		}
		return c, err
	}})
	var hold atomic.Bool
	gate := make(chan struct{})
	stuck := make(chan struct{}, 1)
	var once sync.Once
	socket.FanOutThroughGoroutine(s, func() {
		if hold.Load() {
			select {
			case stuck <- struct{}{}:
			default:
			}
			<-gate
		}
	})
	run(t, s, ann)
	root, _ := dial(t, cfg.Socket)
	other, _ := dial(t, cfg.Socket)
	release := func() { once.Do(func() { close(gate) }) }
	t.Cleanup(release)

	hold.Store(true)
	if err := ann.Drill(stepdown.ReasonStep, nil, 50*time.Millisecond); err != nil {
		t.Fatal(err)
	}
	select {
	case <-stuck:
	case <-time.After(10 * time.Second):
		t.Fatal("the stepdown's fan-out to the other uid never started")
	}
	// The stepdown, then the resume 50 ms later, while the fan-out is
	// still stuck on the stepdown.
	var seqs []uint64
	for _, want := range []string{stepdown.TypeStepdown, stepdown.TypeResume} {
		m := next(t, root)
		if m.Type != want {
			t.Fatalf("root got %s, want a %s", m, want)
		}
		seqs = append(seqs, m.Seq)
	}
	select {
	case <-stuck:
	default:
	}
	hold.Store(false)
	release()
	// The other client: the stepdown, then the resume, each heartbeat
	// between or after them saying the seq of the event before it.
	other.SetReadDeadline(time.Now().Add(10 * time.Second))
	var events []uint64
	for i := 1; len(events) < 2; i++ {
		m, err := other.Read()
		if err != nil {
			t.Fatalf("the other client, message %d: %v", i, err)
		}
		if m.Type == stepdown.TypeHeartbeat {
			if len(events) == 0 || m.Seq != events[len(events)-1] {
				t.Fatalf("the other client's message %d is a heartbeat of seq %d after the events %v", i, m.Seq, events)
			}
			continue
		}
		want := []string{stepdown.TypeStepdown, stepdown.TypeResume}[len(events)]
		if m.Type != want || m.Seq != seqs[len(events)] {
			t.Fatalf("the other client's message %d is %s seq %d, want a %s seq %d", i, m.Type, m.Seq, want, seqs[len(events)])
		}
		events = append(events, m.Seq)
	}
}
