package hostclocktest

import (
	"sync"
	"sync/atomic"
	"time"

	"github.com/clockwatch/clockwatch/internal/host"
	"github.com/clockwatch/clockwatch/internal/hostclock"
	"github.com/clockwatch/clockwatch/internal/kernel"
)

// Origin says where Clocks' samples come from.
type Origin int

const (
	// Simulated is a steady clock: each read advances MONOTONIC, BOOTTIME
	// and REALTIME by Tick from Start.
	Simulated Origin = iota
	// HostMonotonic reads the host's CLOCK_MONOTONIC (the clock the
	// stepdown policy and the marks run on) for MONOTONIC and BOOTTIME;
	// REALTIME is MONOTONIC plus Start.Real.
	HostMonotonic
	// Host reads the host's clocks (hostclock.SysClocks); REALTIME is
	// moved by the steps only.
	Host
)

// Clocks is a hostclock.ClockReader for tests. The zero value is a simulated
// steady clock starting at zero with a 1 ms tick. Every field is read under
// its lock: set them before the first read, or through the methods.
type Clocks struct {
	// Origin is where the samples come from (unless Samples is set).
	Origin Origin
	// Start is the simulated clock's first state (before the first tick);
	// for HostMonotonic, Start.Real is REALTIME's offset from MONOTONIC.
	Start kernel.Sample
	// Tick is how far the simulated clock advances a read; 0 is 1 ms.
	Tick time.Duration
	// Samples, when set, are returned in order, the last one repeated.
	Samples []kernel.Sample
	// Windows, when set, are the read windows of the samples in order, the
	// last one repeated (else Start.Window, or 1000 ns for HostMonotonic).
	Windows []int64
	// Err, when set, is what every read returns.
	Err error
	// OnRead, when set, is called after each good read with the number of
	// reads so far, outside the lock.
	OnRead func(reads int)

	mu     sync.Mutex
	reads  int
	ticks  int64
	offset int64
	last   kernel.Sample
}

var _ hostclock.ClockReader = (*Clocks)(nil)

// ReadClocks implements hostclock.ClockReader.
func (c *Clocks) ReadClocks(s *kernel.Sample) error {
	c.mu.Lock()
	if c.Err != nil {
		err := c.Err
		c.mu.Unlock()
		return err
	}
	var err error
	switch {
	case c.Samples != nil:
		*s = c.Samples[min(c.reads, len(c.Samples)-1)]
	case c.Origin == Host:
		err = hostclock.SysClocks{}.ReadClocks(s)
	case c.Origin == HostMonotonic:
		m := host.Monotonic()
		*s = kernel.Sample{Mono: m, Boot: m, Real: m + c.Start.Real, Window: 1000}
	default:
		tick := int64(c.Tick)
		if tick == 0 {
			tick = int64(time.Millisecond)
		}
		c.ticks++
		d := c.ticks * tick
		*s = c.Start
		s.Mono += d
		s.Boot += d
		s.Real += d
	}
	if err != nil {
		c.mu.Unlock()
		return err
	}
	s.Real += c.offset
	if c.Windows != nil {
		s.Window = c.Windows[min(c.reads, len(c.Windows)-1)]
	}
	c.reads++
	c.last = *s
	n, on := c.reads, c.OnRead
	c.mu.Unlock()
	if on != nil {
		on(n)
	}
	return nil
}

// Step moves the wall clock (REALTIME) by d from the next read on.
func (c *Clocks) Step(d time.Duration) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.offset += int64(d)
}

// SetErr makes every read from now on fail with err (nil: succeed again).
func (c *Clocks) SetErr(err error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.Err = err
}

// Reads returns how many reads succeeded.
func (c *Clocks) Reads() int {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.reads
}

// Last returns the last sample read.
func (c *Clocks) Last() kernel.Sample {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.last
}

// Timex is a hostclock.TimexReader for tests: it returns Raw, or Err, and counts
// its reads (safe for concurrent use; set Raw and Err before the first read).
type Timex struct {
	Raw   kernel.RawTimex
	Err   error
	reads atomic.Int64
}

var _ hostclock.TimexReader = (*Timex)(nil)

// ReadTimex implements hostclock.TimexReader.
func (t *Timex) ReadTimex() (kernel.RawTimex, error) {
	t.reads.Add(1)
	return t.Raw, t.Err
}

// Reads returns how many times ReadTimex was called.
func (t *Timex) Reads() int64 { return t.reads.Load() }

// Disciplined is a kernel a time daemon keeps: maxerror 10 ms, PLL on.
func Disciplined() *Timex {
	return &Timex{Raw: kernel.RawTimex{MaxError: 10_000, EstError: 1_000, Status: kernel.StatusPLL}}
}

// Undisciplined is a kernel nobody keeps: maxerror saturated at 16 s,
// STA_UNSYNC set.
func Undisciplined() *Timex {
	return &Timex{Raw: kernel.RawTimex{MaxError: 16_000_000, EstError: 16_000_000, Status: kernel.StatusUnsync}}
}
