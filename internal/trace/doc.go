// Package trace records the step detector's inputs (clock samples and
// clock-set marks) as JSON lines, reads them back with errors that name the
// line, and replays them through the same Detector the daemon runs, so that a
// user can attach a trace to a bug report and the detector is tested on
// recorded scenarios. The format is described in docs/trace-format.md.
package trace
