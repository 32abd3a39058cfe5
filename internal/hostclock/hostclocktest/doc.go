// Package hostclocktest holds the fakes of package hostclock's readers,
// beside the real ones, for every package's tests: Clocks (a
// hostclock.ClockReader: a simulated steady clock, the host's clocks, or a
// list of samples, each with a wall clock a test can step) and Timex (a
// hostclock.TimexReader that counts its reads). One fake each, rather than
// one per test file.
package hostclocktest
