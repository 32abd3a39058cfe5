package socket

import (
	"context"
	"errors"
	"net"
	"path/filepath"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus/testutil"

	"golang.org/x/sys/unix"

	"github.com/clockwatch/clockwatch/internal/announce"
	"github.com/clockwatch/clockwatch/internal/policy"
	"github.com/clockwatch/clockwatch/stepdown"
)

// TestBroadcastOrder: the privileged first, in the order they came, then
// every uid in turn, however many connections one uid holds; the order is
// made again when a client goes.
func TestBroadcastOrder(t *testing.T) {
	t.Parallel()
	s := &Server{clients: map[*client]struct{}{}, held: map[uint32]int{},
		opts: Options{SelfUID: 999}, cfg: Config{DrillUIDs: []uint32{500}}}
	add := func(uid uint32, credErr error) *client {
		c := &client{cred: Cred{UID: uid}, credErr: credErr}
		s.addLocked(c)
		return c
	}
	var many []*client
	for range 300 {
		many = append(many, add(1000, nil))
	}
	other := add(2000, nil)
	unknown := add(0, errors.New("no SO_PEERCRED")) // limited, as uid 2^32-1
	drill := add(500, nil)
	self := add(999, nil)
	root := add(0, nil)

	got := s.orderLocked()
	want := append([]*client{drill, self, root, many[0], other, unknown}, many[1:]...)
	if len(got) != len(want) {
		t.Fatalf("order has %d clients, want %d", len(got), len(want))
	}
	for i := range want {
		if got[i] != want[i] {
			t.Fatalf("order[%d] is uid %d (client %d), want uid %d (client %d)", i, got[i].cred.UID, got[i].id, want[i].cred.UID, want[i].id)
		}
	}
	if again := s.orderLocked(); &again[0] != &got[0] {
		t.Error("the order was made again with no client come or gone")
	}

	s.removeLocked(root)
	s.removeLocked(many[0])
	got = s.orderLocked()
	want = append([]*client{drill, self, many[1], other, unknown}, many[2:]...)
	if !slices.Equal(got, want) {
		t.Errorf("after root and uid 1000's first went: order starts with uids %d %d %d %d %d, want 500 999 1000 2000 and the unknown",
			got[0].cred.UID, got[1].cred.UID, got[2].cred.UID, got[3].cred.UID, got[4].cred.UID)
	}
}

// TestPacer: a burst free, then one event every 1/rate; time off refills it.
func TestPacer(t *testing.T) {
	t.Parallel()
	p := newPacer(1000, 10) // one a millisecond past a burst of ten
	t0 := time.Unix(1_700_000_000, 0)
	for i := range 10 {
		if d := p.take(t0); d != 0 {
			t.Fatalf("event %d of the burst waits %v", i+1, d)
		}
	}
	for i, want := range []time.Duration{time.Millisecond, 2 * time.Millisecond, 3 * time.Millisecond} {
		if d := p.take(t0); d != want {
			t.Errorf("event %d past the burst waits %v, want %v", i+1, d, want)
		}
	}
	// 20 ms later the bucket is full again: ten more for free.
	t1 := t0.Add(20 * time.Millisecond)
	for i := range 10 {
		if d := p.take(t1); d != 0 {
			t.Fatalf("after a rest, event %d waits %v", i+1, d)
		}
	}
	if d := p.take(t1); d != time.Millisecond {
		t.Errorf("past the new burst: waits %v, want 1ms", d)
	}
}

// TestRefusalAllocatesNothing: a connection accepted and refused by its
// uid's rate costs no allocation (a connection flood kept the collector
// running, and its workers took the processors the announcements needed).
func TestRefusalAllocatesNothing(t *testing.T) {
	cfg := DefaultConfig()
	cfg.Socket = filepath.Join(t.TempDir(), "stepdown.sock")
	s, err := New(cfg, announce.New(policy.DefaultConfig(), announce.Options{}),
		Options{PeerCred: func(int) (Cred, error) { return Cred{PID: 1, UID: 1000, GID: 1000}, nil }, SelfUID: 999})
	if err != nil {
		t.Fatal(err)
	}
	l, err := Listen(cfg)
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	a, err := newAcceptor(l)
	if err != nil {
		t.Fatal(err)
	}
	defer a.close()
	now := time.Now()
	s.rate.has(1000, now)
	s.rate.bucket(1000, now).tokens = -1e9 // spent, for longer than the test
	s.rate.tell(1000, now)                 // told: the next refusals are silent
	addr := &unix.SockaddrUnix{Name: cfg.Socket}
	var admitted bool
	allocs := testing.AllocsPerRun(200, func() {
		fd, err := unix.Socket(unix.AF_UNIX, unix.SOCK_STREAM|unix.SOCK_CLOEXEC, 0)
		if err != nil {
			t.Fatal(err)
		}
		defer unix.Close(fd)
		if err := unix.Connect(fd, addr); err != nil {
			t.Fatal(err)
		}
		nfd, err := a.accept()
		if err != nil {
			t.Fatal(err)
		}
		admitted = admitted || s.admit(nfd)
	})
	if admitted {
		t.Fatal("a connection of a uid without a token was admitted")
	}
	if allocs != 0 {
		t.Errorf("a connection accepted and refused allocates %.1f times, want 0", allocs)
	}
}

// TestHeartbeatReachesEveryone: updates that carry no announcement (the
// state's figures, at every feed) do not cut a heartbeat short: with 600
// clients (three slices) and such updates coming all the time, every
// heartbeat reaches all 600. Cut short, the clients at the end of the order
// heard nothing for minutes (test/systemdvm's memory load lost hundreds).
func TestHeartbeatReachesEveryone(t *testing.T) {
	t.Parallel()
	cfg := DefaultConfig()
	cfg.Socket = filepath.Join(t.TempDir(), "stepdown.sock")
	cfg.Heartbeat = time.Hour // heartbeats only when the test calls them
	ann := announce.New(policy.DefaultConfig(), announce.Options{})
	s, err := New(cfg, ann, Options{SelfUID: 999})
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- s.Run(ctx) }()
	t.Cleanup(func() {
		cancel()
		if err := <-done; err != nil {
			t.Errorf("Run: %v", err)
		}
	})
	<-s.Ready()
	raiseNoFile(t, 2048)
	const n = 600
	for range n {
		c, err := net.Dial("unix", cfg.Socket)
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { c.Close() })
	}
	deadline := time.Now().Add(10 * time.Second)
	for s.Subscribers() < n && time.Now().Before(deadline) {
		time.Sleep(10 * time.Millisecond)
	}
	if got := s.Subscribers(); got != n {
		t.Fatalf("%d subscribers admitted, want %d", got, n)
	}
	stop := make(chan struct{})
	var wg sync.WaitGroup
	wg.Go(func() {
		for {
			select {
			case <-stop:
				return
			default:
			}
			s.mu.Lock()
			u := announce.Update{Snapshot: s.snap}
			s.mu.Unlock()
			s.update(u)
		}
	})
	sent := func() float64 { return testutil.ToFloat64(s.met.messagesSent.WithLabelValues(stepdown.TypeHeartbeat)) }
	for i := range 20 {
		before := sent()
		s.heartbeat()
		if got := sent() - before; got != n {
			t.Errorf("heartbeat %d reached %v of %d clients", i+1, got, n)
			break
		}
	}
	close(stop)
	wg.Wait()
}

// raiseNoFile raises the soft limit on open files to n when it is lower.
func raiseNoFile(t *testing.T, n uint64) {
	t.Helper()
	var l unix.Rlimit
	if err := unix.Getrlimit(unix.RLIMIT_NOFILE, &l); err != nil {
		t.Fatal(err)
	}
	if l.Cur < n && l.Max >= n {
		l.Cur = n
		if err := unix.Setrlimit(unix.RLIMIT_NOFILE, &l); err != nil {
			t.Fatal(err)
		}
	}
}
