package socket_test

import (
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/clockwatch/clockwatch/internal/transport/socket"
	"github.com/clockwatch/clockwatch/stepdown"
)

// whys records what Options.Busy was told.
type whys struct {
	mu  sync.Mutex
	got []string
}

func (w *whys) busy(why string) {
	w.mu.Lock()
	defer w.mu.Unlock()
	if !slices.Contains(w.got, why) {
		w.got = append(w.got, why)
	}
}

func (w *whys) list() []string {
	w.mu.Lock()
	defer w.mu.Unlock()
	return slices.Clone(w.got)
}

// TestBusy: the server tells Options.Busy of the work a flood causes (a
// refused connection, a fan-out to thousands), and of nothing else: a
// handful of subscribers, their drills and heartbeats.
func TestBusy(t *testing.T) {
	t.Parallel()
	cfg := testConfig(t)
	cfg.MaxClientsPerUID = 600
	cfg.Heartbeat = time.Hour // an announcement's fan-out, not a heartbeat's
	creds := make(chan socket.Cred, 1)
	var w whys
	s, ann := start(t, cfg, socket.Options{PeerCred: queuedCreds(creds), SelfUID: 999, Busy: w.busy})
	dial := func(uid uint32) (*stepdown.Conn, stepdown.Message) {
		t.Helper()
		return dialAs(t, cfg.Socket, creds, uid)
	}
	root, _ := dial(0)
	for range 10 {
		dial(1000)
	}
	if err := ann.Drill(stepdown.ReasonStep, nil, 50*time.Millisecond); err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{stepdown.TypeStepdown, stepdown.TypeResume} {
		if m := next(t, root); m.Type != want {
			t.Fatalf("root got %v, want a %s", m, want)
		}
	}
	if got := w.list(); len(got) > 0 {
		t.Fatalf("eleven subscribers and a drill told Busy %q, want nothing", got)
	}

	// Past uid 1000's share: refused, and Busy told.
	for range 600 - 10 {
		dial(1000)
	}
	if _, m := dial(1000); m.Code != stepdown.CodeBusy {
		t.Fatalf("uid 1000 past its share: %v, want a refusal", m)
	}
	// Told once the refusal is written: a moment after the client reads it.
	waitFor(t, "Busy told of the refusal", func() bool { return len(w.list()) > 0 })
	if got, want := w.list(), []string{"refusing stepdown connections"}; !slices.Equal(got, want) {
		t.Fatalf("Busy was told %q, want %q", got, want)
	}
	// 600 subscribers beyond the privileged: an announcement's fan-out
	// tells Busy too.
	if err := ann.Drill(stepdown.ReasonStep, nil, 50*time.Millisecond); err != nil {
		t.Fatal(err)
	}
	if m := next(t, root); m.Type != stepdown.TypeStepdown {
		t.Fatalf("root got %v, want a stepdown", m)
	}
	want := []string{"refusing stepdown connections", "writing to thousands of stepdown subscribers"}
	// Told as the fan-out is queued: a moment after root has the event.
	waitFor(t, "Busy told of the fan-out", func() bool { return len(w.list()) > 1 })
	if got := w.list(); !slices.Equal(got, want) {
		t.Fatalf("Busy was told %q, want %q", got, want)
	}
	if n := s.Subscribers(); n != 601 {
		t.Fatalf("%d subscribers, want 601", n)
	}
}
