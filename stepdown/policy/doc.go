// Package policy decides, from what clockwatch observes, whether local
// applications may trust the clock: the state machine behind the stepdown
// socket. It is a pure function of its inputs: every method takes the
// CLOCK_MONOTONIC time of the observation, and nothing here reads a clock,
// sleeps or starts a goroutine, so the tests are tables of inputs.
//
// Triggers (each with a threshold, each can be disabled): a wall-clock step
// larger than a threshold, |chrony system offset| over a threshold, a time
// source reporting unsynchronised for longer than a grace period, an error
// bound over a threshold, and a clockwatch probe failing for longer than a
// grace period. Any trigger moves the state to stepdown; the state goes back to
// ok once no condition has held for the hold-down period. A drill is a stepdown
// that resumes after its own hold time, unless a real trigger fires meanwhile.
package policy
