// Package probetest holds the fakes of package probe's host readers, beside
// the real ones, for every package's tests: Clocks (a probe.ClockReader: a
// simulated steady clock, the host's clocks, or a list of samples, each with
// a wall clock a test can step) and Timex (a probe.TimexReader that counts
// its reads). One fake each, rather than one per test file.
package probetest
