package bus

import (
	"sync"
	"testing"

	"github.com/google/go-cmp/cmp"
)

func TestPublishDeliversInOrder(t *testing.T) {
	t.Parallel()
	b := New[int]()
	a, c := b.Subscribe(10), b.Subscribe(10)
	for i := range 5 {
		b.Publish(i)
	}
	a.Close()
	c.Close()
	for _, s := range []*Subscription[int]{a, c} {
		var got []int
		for v := range s.C() {
			got = append(got, v)
		}
		if diff := cmp.Diff([]int{0, 1, 2, 3, 4}, got); diff != "" {
			t.Errorf("received (-want +got):\n%s", diff)
		}
	}
	if got := b.Dropped(); got != 0 {
		t.Errorf("Dropped() = %d, want 0", got)
	}
}

func TestFullSubscriberDropsWithoutBlocking(t *testing.T) {
	t.Parallel()
	b := New[int]()
	stuck := b.Subscribe(2)
	fine := b.Subscribe(100)
	for i := range 10 {
		b.Publish(i) // must not block on stuck
	}
	if got := stuck.Dropped(); got != 8 {
		t.Errorf("stuck.Dropped() = %d, want 8", got)
	}
	if got := fine.Dropped(); got != 0 {
		t.Errorf("fine.Dropped() = %d, want 0", got)
	}
	if got := b.Dropped(); got != 8 {
		t.Errorf("bus Dropped() = %d, want 8", got)
	}
	if got := len(fine.C()); got != 10 {
		t.Errorf("fine buffered %d, want 10", got)
	}
}

func TestCloseIsIdempotentAndRemoves(t *testing.T) {
	t.Parallel()
	b := New[int]()
	s := b.Subscribe(1)
	s.Close()
	s.Close()
	b.Publish(1)
	if got := b.Subscribers(); got != 0 {
		t.Errorf("Subscribers() = %d, want 0", got)
	}
}

func TestConcurrentPublishAndClose(t *testing.T) {
	t.Parallel()
	b := New[int]()
	var wg sync.WaitGroup
	for range 4 {
		wg.Go(func() {
			for range 100 {
				s := b.Subscribe(1)
				b.Publish(1)
				s.Close()
			}
		})
	}
	wg.Go(func() {
		for i := range 1000 {
			b.Publish(i)
		}
	})
	wg.Wait()
}

func BenchmarkPublish(b *testing.B) {
	bus := New[[64]byte]()
	s := bus.Subscribe(1)
	defer s.Close()
	var v [64]byte
	b.ReportAllocs()
	for b.Loop() {
		bus.Publish(v)
		<-s.C()
	}
}
