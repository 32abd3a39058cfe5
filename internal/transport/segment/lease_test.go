package segment_test

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/clockwatch/clockwatch/internal/clockbound"
	"github.com/clockwatch/clockwatch/internal/timesource"
	"github.com/clockwatch/clockwatch/internal/transport/segment"
	"github.com/clockwatch/clockwatch/internal/transport/segment/segmenttest"
	"github.com/clockwatch/clockwatch/stepdown"
	"github.com/clockwatch/clockwatch/stepdown/boundedtime"
)

// store grants leases of a fixed length and records the writes.
type store struct {
	mu     sync.Mutex
	lease  time.Duration
	renews int
	writes []string
}

func (s *store) Renew(context.Context) (time.Time, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.renews++
	return time.Now().Add(s.lease), nil
}

// written is how many values were written.
func (s *store) written() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return len(s.writes)
}

func (s *store) Write(_ context.Context, v string) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.writes = append(s.writes, v)
	return nil
}

// TestLeaseExample runs the lease example of docs/bounded-time.md against a
// real announcer with its stepdown socket and a real segment kept by the
// segment transport's publisher.
func TestLeaseExample(t *testing.T) {
	t.Parallel()
	sd, socket := segmenttest.Stepdown(t, 30*time.Second)
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	path := filepath.Join(t.TempDir(), "shm0")
	seg, err := clockbound.Create(path, 0o644, -1)
	if err != nil {
		t.Fatal(err)
	}
	var mu sync.Mutex
	reading := timesource.Reading{Source: "chrony", Role: timesource.Authoritative, Found: true, Up: true, HasData: true,
		Synchronized: true, ErrorBound: time.Millisecond, LastSuccess: time.Now()}
	cfg := clockbound.DefaultConfig()
	cfg.Interval = 20 * time.Millisecond
	p := segment.NewPublisher(cfg, seg, segment.Options{Announcer: sd, Readings: func() []timesource.Reading {
		mu.Lock()
		defer mu.Unlock()
		return []timesource.Reading{reading}
	}})
	go p.Run(ctx)
	var bt *boundedtime.Reader
	for deadline := time.Now().Add(10 * time.Second); bt == nil; time.Sleep(5 * time.Millisecond) {
		bt, err = boundedtime.Open(path)
		if time.Now().After(deadline) {
			t.Fatal(err)
		}
	}
	defer bt.Close()
	sub := stepdown.Subscribe(ctx, stepdown.Options{Path: socket})
	if err := sub.WaitOK(ctx); err != nil {
		t.Fatal(err)
	}

	run := func(st *store) (chan<- string, <-chan error) {
		values, done := make(chan string), make(chan error, 1)
		go func() { done <- holdLease(ctx, sub, bt, st, values) }()
		return values, done
	}

	// Writes go through, and a lease that gets short is renewed.
	st := &store{lease: 5*time.Second + 100*time.Millisecond}
	values, done := run(st)
	values <- "a"
	time.Sleep(150 * time.Millisecond) // less than 5 s surely left now
	values <- "b"
	close(values)
	if err := <-done; err != nil || strings.Join(st.writes, "") != "ab" || st.renews != 2 {
		t.Fatalf("holdLease() = %v with writes %q and %d renewals; want nil, ab, 2", err, st.writes, st.renews)
	}

	// A stepdown cancels the holder at once, from the socket.
	st = &store{lease: 10 * time.Second}
	values, done = run(st)
	values <- "c"
	// The drill comes once "c" is written, with the holder back waiting for
	// a value: then only the socket can end it (during the write, the
	// segment's "disrupted" could stop it first, which is also a release).
	for deadline := time.Now().Add(5 * time.Second); st.written() < 1; time.Sleep(time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatal(`"c" was not written`)
		}
	}
	if err := sd.Drill(stepdown.ReasonStep, nil, 100*time.Millisecond); err != nil {
		t.Fatal(err)
	}
	var sde *stepdown.StepdownError
	if err := <-done; !errors.As(err, &sde) || sde.State != stepdown.StateStepdown {
		t.Fatalf("holdLease() during a drill = %v, want a StepdownError", err)
	}
	if err := sub.WaitOK(ctx); err != nil {
		t.Fatal(err)
	}

	// A bound that has grown past the lease stops the next write, from the
	// segment, while the socket still says ok.
	mu.Lock()
	reading.ErrorBound = time.Minute
	mu.Unlock()
	for deadline := time.Now().Add(5 * time.Second); p.Last().Bound < time.Minute; time.Sleep(5 * time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatal("the publisher did not write the 1 min bound")
		}
	}
	st = &store{lease: 10 * time.Second}
	values, done = run(st)
	values <- "d"
	if err := <-done; !errors.Is(err, errLeaseUnsure) || len(st.writes) != 0 {
		t.Fatalf("holdLease() with a 1 min bound = %v after writes %q, want errLeaseUnsure and no write", err, st.writes)
	}
}

// TestLeaseExampleInDocs keeps docs/bounded-time.md's lease example the one
// this test runs.
func TestLeaseExampleInDocs(t *testing.T) {
	t.Parallel()
	src, err := os.ReadFile("lease_example_test.go")
	if err != nil {
		t.Fatal(err)
	}
	_, code, _ := strings.Cut(string(src), "// BEGIN holdLease (docs/bounded-time.md)\n\n")
	code, _, _ = strings.Cut(code, "\n// END holdLease")
	doc, err := os.ReadFile("../../../docs/bounded-time.md")
	if err != nil {
		t.Fatal(err)
	}
	if code == "" || !strings.Contains(string(doc), "```go\n"+code+"```") {
		t.Errorf("docs/bounded-time.md does not show holdLease as in lease_example_test.go:\n%s", code)
	}
}
