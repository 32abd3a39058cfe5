package announce_test

import (
	"errors"
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/clockwatch/clockwatch/internal/announce"
	"github.com/clockwatch/clockwatch/internal/policy"
	"github.com/clockwatch/clockwatch/stepdown"
)

// fakeMono is a CLOCK_MONOTONIC the test moves; with it the announcer sets
// no timer, and Tick moves the policy on.
type fakeMono struct{ now time.Duration }

func (f *fakeMono) read() time.Duration { return f.now }

func newAnnouncer(t *testing.T, mono *fakeMono) *announce.Announcer {
	t.Helper()
	a := announce.New(policy.Config{HoldDown: time.Second, Triggers: policy.DefaultTriggers()},
		announce.Options{Epoch: 3, Mono: mono.read, Await: []string{"clocks"}})
	t.Cleanup(a.Close)
	return a
}

// TestTransportsSeeEveryAnnouncement: an in-line subscription and a
// buffered one get the same announcements, in order, numbered; the in-line
// one gets the state first and after each update; Latest says where they
// left the state.
func TestTransportsSeeEveryAnnouncement(t *testing.T) {
	t.Parallel()
	mono := &fakeMono{now: time.Minute}
	a := newAnnouncer(t, mono)
	var inline []string
	var updates []announce.Update
	in := a.Subscribe("inline", announce.InLine(func(u announce.Update) {
		updates = append(updates, u)
		for _, an := range u.Announcements {
			inline = append(inline, an.Message.String())
		}
	}))
	if len(updates) != 1 || len(updates[0].Announcements) != 0 || updates[0].Snapshot.Seq != 0 || !updates[0].Snapshot.Starting ||
		updates[0].Snapshot.HoldDown != time.Second {
		t.Fatalf("an in-line subscription's first updates = %+v, want one: the state now (starting, seq 0, hold-down 1s)", updates)
	}
	sub := a.Subscribe("test", announce.Buffered(8))
	defer sub.Close()
	if sub.C() == nil || in.C() != nil {
		t.Errorf("C() is %v buffered and %v in line, want a channel and nil", sub.C(), in.C())
	}

	if st := a.Latest(); !st.Starting || st.State != stepdown.StateUnknown || st.Seq != 0 {
		t.Fatalf("Latest() before any input = %+v, want starting, unknown, seq 0", st)
	}
	a.ProbeOK("clocks")
	a.Step(policy.Step{Seconds: 2, Epoch: 4})
	mono.now += 2 * time.Second
	a.ProbeOK("clocks")
	for i, u := range updates {
		if n := len(u.Announcements); n > 0 && u.Snapshot.Seq != u.Announcements[n-1].Seq() {
			t.Errorf("update %d: snapshot seq %d after announcements up to %d", i, u.Snapshot.Seq, u.Announcements[n-1].Seq())
		}
	}
	if last := updates[len(updates)-1].Snapshot; last.Seq != 3 || last.State != stepdown.StateOK {
		t.Errorf("the in-line subscription's last snapshot = %+v, want ok at seq 3", last)
	}
	in.Close()
	in.Close() // twice is harmless
	a.Step(policy.Step{Seconds: 3, Epoch: 5})

	var got []string
	for len(got) < 4 {
		select {
		case an := <-sub.C():
			if an.Seq() != uint64(len(got)+1) {
				t.Errorf("announcement %d has seq %d", len(got)+1, an.Seq())
			}
			got = append(got, an.Message.String())
		case <-time.After(5 * time.Second):
			t.Fatalf("the subscription got %q only", got)
		}
	}
	if diff := cmp.Diff(got[:3], inline); diff != "" {
		t.Errorf("the in-line subscription saw other announcements than the buffered one until closed (-sub +inline):\n%s", diff)
	}
	st := sub.Latest()
	if st.State != stepdown.StateStepdown || st.Reason != stepdown.ReasonStep || st.Epoch != 5 || st.Seq != 4 || st.Starting {
		t.Errorf("Latest() = %+v, want stepdown step, epoch 5, seq 4", st)
	}
	if st.Last.Seq() != 4 || st.Last.Event.StepSeconds == nil || *st.Last.Event.StepSeconds != 3 {
		t.Errorf("Latest().Last = %+v, want the 3 s step at seq 4", st.Last)
	}
	if n := sub.Dropped(); n != 0 {
		t.Errorf("Dropped() = %d with room in the buffer", n)
	}
}

// TestSlowSubscriptionDelaysNobody: a subscription that never reads fills
// its buffer and then loses announcements, counted; the announcer and the
// other transports carry on, and Latest stays right.
func TestSlowSubscriptionDelaysNobody(t *testing.T) {
	t.Parallel()
	mono := &fakeMono{now: time.Minute}
	a := newAnnouncer(t, mono)
	stuck := a.Subscribe("stuck", announce.Buffered(1)) // never read
	defer stuck.Close()
	var seen int
	a.Subscribe("inline", announce.InLine(func(u announce.Update) { seen += len(u.Announcements) }))
	done := make(chan struct{})
	go func() {
		defer close(done)
		a.ProbeOK("clocks") // resume (starting): seq 1
		for i := range 3 {
			a.ProbeFailed("chrony", errors.New("gone")) // pending: nothing yet
			mono.now += 11 * time.Second
			a.Tick() // probe_lost after its 10 s grace
			a.ProbeOK("chrony")
			mono.now += 2 * time.Second
			a.Tick() // resume after the 1 s hold-down
			_ = i
		}
	}()
	select {
	case <-done:
	case <-time.After(5 * time.Second):
		t.Fatal("the announcer blocked on a subscription that does not read")
	}
	if seen != 7 {
		t.Fatalf("the in-line subscription saw %d announcements, want 7", seen)
	}
	if n := len(stuck.C()); n != 1 {
		t.Errorf("a subscription that never reads holds %d announcements, want its buffer (1) full", n)
	}
	if n := stuck.Dropped(); n != 6 {
		t.Errorf("Dropped() = %d, want 6 (7 announced, 1 buffered)", n)
	}
	if st := stuck.Latest(); st.Seq != 7 || st.State != stepdown.StateOK {
		t.Errorf("Latest() = %+v, want ok at seq 7", st)
	}
	stuck.Close()
	stuck.Close() // twice is harmless
	<-stuck.C()   // the buffered one
	if _, ok := <-stuck.C(); ok {
		t.Error("C() still open after Close")
	}
	a.Step(policy.Step{Seconds: 9}) // no panic on a closed subscription
}

// TestInLineDeliveryMayReadLatest: an in-line subscription runs without the
// announcer's lock, and nobody waits for its turn holding it: reading
// Latest from the delivery while other goroutines feed the announcer
// deadlocks nothing, and Latest is never behind the update delivered.
func TestInLineDeliveryMayReadLatest(t *testing.T) {
	t.Parallel()
	a := announce.New(policy.Config{HoldDown: 0, Triggers: policy.DefaultTriggers()}, announce.Options{Epoch: 1})
	t.Cleanup(a.Close)
	var behind []string
	var last uint64
	sub := a.Subscribe("reader", announce.InLine(func(u announce.Update) {
		// One turn at a time: no lock needed for behind and last.
		if got := a.Latest(); got.Seq < u.Snapshot.Seq {
			behind = append(behind, fmt.Sprintf("Latest seq %d, update seq %d", got.Seq, u.Snapshot.Seq))
		}
		for _, an := range u.Announcements {
			if an.Seq() != last+1 {
				behind = append(behind, fmt.Sprintf("seq %d after %d", an.Seq(), last))
			}
			last = an.Seq()
		}
	}))
	defer sub.Close()
	done := make(chan struct{})
	go func() {
		defer close(done)
		var wg sync.WaitGroup
		for g := range 4 {
			wg.Go(func() {
				for i := range 100 {
					a.ProbeOK("clocks")
					a.Step(policy.Step{Seconds: 1, Epoch: uint64(2 + g*100 + i)})
					a.Tick()
				}
			})
		}
		wg.Wait()
	}()
	select {
	case <-done:
	case <-time.After(20 * time.Second):
		t.Fatal("feeding the announcer while an in-line delivery reads Latest deadlocked")
	}
	sub.Close()
	if len(behind) > 0 {
		t.Errorf("%d wrong deliveries, the first: %s", len(behind), behind[0])
	}
	if n := a.Latest().Seq; last != n || n < 2 {
		t.Errorf("the in-line subscription saw up to seq %d, the announcer made %d", last, n)
	}
}
