package leader

import (
	"slices"
	"sync"
	"time"
)

// Clock reads a wall clock. The experiment gives node A one it can step,
// because this machine's clock must never be touched.
type Clock interface {
	Now() time.Time
}

// SystemClock is the machine's wall clock, without Go's monotonic reading so
// that comparisons really use the wall clock.
type SystemClock struct{}

// Now returns the wall clock time.
func (SystemClock) Now() time.Time { return time.Now().Round(0) }

// SteppedClock is the machine's wall clock moved by an offset that Step
// changes, as a step of the system clock would. It is safe for concurrent use.
type SteppedClock struct {
	mu     sync.Mutex
	offset time.Duration
}

// Now returns the wall clock plus the offset.
func (c *SteppedClock) Now() time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	return time.Now().Round(0).Add(c.offset)
}

// Step moves the clock by d (negative: back).
func (c *SteppedClock) Step(d time.Duration) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.offset += d
}

// Term is one period in which a node believed it was the leader. Start and
// End carry Go's monotonic reading (comparable between nodes of one process);
// StartWall and EndWall are what the node's own wall clock said.
type Term struct {
	Token              int64
	Start, End         time.Time
	StartWall, EndWall time.Time
	// EndReason says why the node stopped believing; empty while it leads.
	EndReason string
}

// Attempt is one booking the leader tried: started At, answered Took later.
type Attempt struct {
	At       time.Time
	Took     time.Duration
	Token    int64
	Landed   int
	Rejected int
	Failed   bool
}

// Stats is what a node did: its terms and its writes, counted in entries.
type Stats struct {
	Node      string
	Terms     []Term
	Attempted int64
	Landed    int64
	Rejected  int64
	// Failed counts entries of bookings that returned an error (for
	// instance cancelled by a stepdown); the store may or may not hold them.
	Failed   int64
	Attempts []Attempt
}

// Leading reports whether the last term is still open.
func (s Stats) Leading() bool {
	return len(s.Terms) > 0 && s.Terms[len(s.Terms)-1].End.IsZero()
}

// Recorder collects a node's Stats. It is safe for concurrent use.
type Recorder struct {
	mu           sync.Mutex
	keepAttempts bool
	stats        Stats
}

// NewRecorder returns a Recorder for node. With keepAttempts it keeps every
// Attempt (for the experiment; a long-running service should not).
func NewRecorder(node string, keepAttempts bool) *Recorder {
	return &Recorder{keepAttempts: keepAttempts, stats: Stats{Node: node}}
}

// Snapshot returns a copy of the stats so far.
func (r *Recorder) Snapshot() Stats {
	r.mu.Lock()
	defer r.mu.Unlock()
	s := r.stats
	s.Terms = slices.Clone(s.Terms)
	s.Attempts = slices.Clone(s.Attempts)
	return s
}

func (r *Recorder) begin(token int64, wall time.Time) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.stats.Terms = append(r.stats.Terms, Term{Token: token, Start: time.Now(), StartWall: wall})
}

func (r *Recorder) end(wall time.Time, reason string) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if n := len(r.stats.Terms); n > 0 && r.stats.Terms[n-1].End.IsZero() {
		t := &r.stats.Terms[n-1]
		t.End, t.EndWall, t.EndReason = time.Now(), wall, reason
	}
}

func (r *Recorder) attempt(a Attempt, entries int) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.stats.Attempted += int64(entries)
	r.stats.Landed += int64(a.Landed)
	r.stats.Rejected += int64(a.Rejected)
	if a.Failed {
		r.stats.Failed += int64(entries)
	}
	if r.keepAttempts {
		r.stats.Attempts = append(r.stats.Attempts, a)
	}
}
