package socket_test

import (
	"errors"
	"fmt"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/clockwatch/clockwatch/internal/announce"
	"github.com/clockwatch/clockwatch/internal/transport/socket"
	"github.com/clockwatch/clockwatch/stepdown"
)

// TestHelloThenEveryEventWhileAnnouncing: clients connect while drills are
// announced back to back (the server greets from the state its in-line
// delivery keeps, never from the announcer): each client's events follow
// its hello's seq with no gap and no repeat, each heartbeat says the last
// seq sent, and every client gets every event up to the last.
//
// In line (a few clients: every write on the announcing goroutine) and
// through the fan-out goroutine (as beyond fanSlice clients of other uids).
func TestHelloThenEveryEventWhileAnnouncing(t *testing.T) {
	t.Parallel()
	for _, fanOut := range []bool{false, true} {
		t.Run(fmt.Sprintf("fan-out %v", fanOut), func(t *testing.T) {
			t.Parallel()
			testHelloThenEveryEvent(t, fanOut)
		})
	}
}

func testHelloThenEveryEvent(t *testing.T, fanOut bool) {
	cfg := testConfig(t)
	// Half the clients are of another uid than root's (the test's):
	// the fan-out writes to them after the privileged.
	var calls atomic.Int32
	s, ann := newServer(t, cfg, socket.Options{PeerCred: func(fd int) (socket.Cred, error) {
		c, err := socket.PeerCred(fd)
		if calls.Add(1)%2 == 0 {
			c.UID = 1000
		}
		return c, err
	}})
	if fanOut {
		socket.FanOutThroughGoroutine(s, nil)
	}
	run(t, s, ann)
	const drills, clients = 40, 24

	stop := make(chan struct{})
	var final uint64
	go func() {
		defer close(stop)
		for range drills {
			for {
				err := ann.Drill(stepdown.ReasonStep, nil, time.Millisecond)
				if err == nil {
					break
				}
				if !errors.Is(err, announce.ErrBusy) {
					t.Errorf("drill: %v", err)
					return
				}
				time.Sleep(100 * time.Microsecond)
			}
		}
		waitFor(t, "the last drill's resume", func() bool { return ann.Latest().State == stepdown.StateOK })
		final = ann.Latest().Seq
	}()

	var wg sync.WaitGroup
	for i := range clients {
		time.Sleep(2 * time.Millisecond) // spread over the drills
		c, hello := dial(t, cfg.Socket)
		wg.Go(func() {
			last := hello.Seq
			for {
				c.SetReadDeadline(time.Now().Add(10 * time.Second))
				m, err := c.Read()
				if err != nil {
					t.Errorf("client %d (hello seq %d): after seq %d: %v", i, hello.Seq, last, err)
					return
				}
				if m.Type == stepdown.TypeHeartbeat {
					if m.Seq != last {
						t.Errorf("client %d: heartbeat says seq %d after event %d", i, m.Seq, last)
					}
				} else if m.Seq != last+1 {
					t.Errorf("client %d (hello seq %d): %s seq %d after seq %d", i, hello.Seq, m.Type, m.Seq, last)
					return
				} else {
					last = m.Seq
				}
				select {
				case <-stop:
					if last == final {
						return
					}
				default:
				}
			}
		})
	}
	wg.Wait()
	<-stop
	if want := uint64(1 + 2*drills); final != want {
		t.Errorf("last seq %d, want %d (the start's resume, then a stepdown and a resume per drill)", final, want)
	}
}
