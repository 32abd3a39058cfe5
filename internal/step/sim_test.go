package step

import (
	"time"

	"github.com/clockwatch/clockwatch/internal/kernel"
)

// simGap is the sim's REALTIME−BOOTTIME at start: a wall clock in 2026.
const simGap = 1_790_000_000 * int64(time.Second)

// sim is a synthetic machine: a timeline of the kernel clocks that tests
// drive with steps, slews, suspends and marks, sampling as the Sampler does.
type sim struct {
	mono, susp, gap, taiOff, window int64
	rate                            float64 // slew of the gap, ratio
	noTAI                           bool
	d                               *Detector
	events                          []Event
}

func newSim(cfg Config, state State) *sim {
	s := &sim{
		mono:   1000 * int64(time.Second),
		gap:    simGap,
		taiOff: 37 * int64(time.Second),
		window: 2 * int64(time.Microsecond),
		d:      NewDetector(cfg, state),
	}
	return s
}

func (s *sim) sample() kernel.Sample {
	boot := s.mono + s.susp
	real := boot + s.gap
	smp := kernel.Sample{Mono: s.mono, Boot: boot, Real: real, Raw: s.mono, TAI: real + s.taiOff, Window: s.window}
	if s.noTAI {
		smp.TAI = 0
	}
	return smp
}

func (s *sim) observe() {
	s.events = append(s.events, s.d.Observe(s.sample())...)
}

// advance lets d of running time pass, slewing the gap.
func (s *sim) advance(d time.Duration) {
	s.mono += int64(d)
	s.gap += int64(s.rate * float64(d))
}

// op is one thing that happens to the simulated machine.
type op func(*sim)

// ticks samples n times at interval d.
func ticks(n int, d time.Duration) op {
	return func(s *sim) {
		for range n {
			s.advance(d)
			s.observe()
		}
	}
}

// stepBy sets the wall clock by x, as clock_settime would, without a mark.
func stepBy(x time.Duration) op { return func(s *sim) { s.gap += int64(x) } }

// mark lets 60 ms pass since the last tick, delivers a clock-set mark, then
// the Sampler's fresh sample 50 µs later.
func mark() op {
	return func(s *sim) {
		s.advance(60 * time.Millisecond)
		s.d.ClockSet(s.mono)
		s.advance(50 * time.Microsecond)
		s.observe()
	}
}

// markIn lets d pass, delivers a clock-set mark, then the Sampler's fresh
// sample 50 µs later.
func markIn(d time.Duration) op {
	return func(s *sim) {
		s.advance(d)
		s.d.ClockSet(s.mono)
		s.advance(50 * time.Microsecond)
		s.observe()
	}
}

// markOnly delivers a mark at the current time without sampling.
func markOnly(at time.Duration) op {
	return func(s *sim) { s.d.ClockSet(s.mono + int64(at)) }
}

// suspend suspends the machine for d: BOOTTIME and REALTIME move, MONOTONIC
// does not.
func suspend(d time.Duration) op { return func(s *sim) { s.susp += int64(d) } }

// slew sets the rate at which the gap drifts.
func slew(rate float64) op { return func(s *sim) { s.rate = rate } }

// leap applies a leap second: +1 inserts (REALTIME goes back one second and
// the TAI offset grows by one), -1 deletes.
func leap(sign int64) op {
	return func(s *sim) {
		s.gap -= sign * int64(time.Second)
		s.taiOff += sign * int64(time.Second)
	}
}

// taiOffset changes the kernel's TAI offset only (as chronyd does at start).
func taiOffset(d time.Duration) op { return func(s *sim) { s.taiOff += int64(d) } }

// noTAI makes the samples lack TAI, as old traces do.
func noTAI() op { return func(s *sim) { s.noTAI = true } }

// window sets the read window of the next samples.
func window(d time.Duration) op { return func(s *sim) { s.window = int64(d) } }

// rewind takes a sample whose monotonic time went back (a broken source).
func rewind() op {
	return func(s *sim) {
		bad := s.sample()
		bad.Mono -= int64(time.Second)
		s.events = append(s.events, s.d.Observe(bad)...)
	}
}
