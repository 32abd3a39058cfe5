// Package policy decides, from what clockwatch observes, whether local
// applications may trust the clock: the state machine behind the stepdown
// socket. It is a pure function of its inputs: every method takes the
// CLOCK_MONOTONIC time of the observation, and nothing here reads a clock,
// sleeps or starts a goroutine, so the tests are tables of inputs.
//
// Its time-source inputs are normalised readings (package timesource), one
// per source: it imports no source package, and judges offset, error bound,
// synchronisation and loss per source, naming the source in each event.
//
// Triggers (each with a threshold, each can be disabled): a wall-clock step
// larger than a threshold, a source's |offset| over a threshold, a time
// source reporting unsynchronised for longer than a grace period (the kernel,
// a fallback, only while no authoritative source answers), an error bound
// over a threshold, and a source or probe failing for longer than a grace
// period. Any trigger moves the state to stepdown; the state goes back to ok
// once no condition has held for the hold-down period and every polled
// source has reported since. The state is unknown until every awaited source
// has given its first reading. A drill is a stepdown that resumes after its
// own hold time, unless a real trigger fires meanwhile. Persisted and
// Restore carry the state across a restart in the same boot.
package policy
