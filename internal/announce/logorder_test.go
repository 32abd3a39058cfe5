package announce_test

import (
	"log/slog"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/clockwatch/clockwatch/internal/announce"
	"github.com/clockwatch/clockwatch/internal/policy"
	"github.com/clockwatch/clockwatch/stepdown"
)

// stuckWriter is a log destination that, once stuck, blocks every write
// until released, as stderr does when journald (or whatever reads it)
// lags. It keeps the lines written after it got stuck.
type stuckWriter struct {
	stuck   atomic.Bool
	release chan struct{}
	lines   chan string
}

func (w *stuckWriter) Write(p []byte) (int, error) {
	if w.stuck.Load() {
		<-w.release
		w.lines <- string(p)
	}
	return len(p), nil
}

// TestAnnouncementDoesNotWaitForTheLog: a stepdown reaches an in-line
// subscription while the announcer's log line for it cannot be written,
// and the line follows once it can. It used to be written before the
// delivery, so a lagging log reader held up every subscriber's stepdown.
func TestAnnouncementDoesNotWaitForTheLog(t *testing.T) {
	t.Parallel()
	w := &stuckWriter{release: make(chan struct{}), lines: make(chan string, 8)}
	a := announce.New(policy.Config{HoldDown: time.Second, Triggers: policy.DefaultTriggers()},
		announce.Options{Epoch: 1, Logger: slog.New(slog.NewTextHandler(w, nil))})
	t.Cleanup(a.Close)
	got := make(chan stepdown.Message, 8)
	sub := a.Subscribe("inline", announce.InLine(func(u announce.Update) {
		for _, an := range u.Announcements {
			got <- an.Message
		}
	}))
	defer sub.Close()
	a.ProbeOK("test")
	if m := <-got; m.Type != stepdown.TypeResume {
		t.Fatalf("after the first report %v, want the resume to ok", m)
	}
	w.stuck.Store(true)
	go a.Step(policy.Step{Seconds: 1})
	select {
	case m := <-got:
		if m.Type != stepdown.TypeStepdown {
			t.Fatalf("delivered %v, want the stepdown", m)
		}
	case <-time.After(10 * time.Second):
		close(w.release)
		t.Fatal("the stepdown was not delivered while its log line could not be written")
	}
	close(w.release)
	select {
	case line := <-w.lines:
		if !strings.Contains(line, `msg="stepdown event"`) || !strings.Contains(line, "type=stepdown reason=step") {
			t.Errorf("log line %q, want the stepdown event", line)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("the stepdown's log line was never written")
	}
}
