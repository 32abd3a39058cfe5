// Package journal keeps clockwatch's history across restarts: an
// append-only, size-bounded JSON-lines journal of step events, fsync'd per
// event, and the clock epoch and sequence with the boot id, written
// atomically, so that the epoch never goes back.
//
// The order of the writes is what keeps the epoch monotonic across a crash
// at any of them (docs/step-detection.md): a new boot's increment and every
// event are journal lines, fsync'd before state.json is replaced, and the
// epoch loaded is the largest either holds. Every write goes through FS, so
// that the fault suite's FaultFS (a test file) can crash at each one.
//
// Nothing here is fatal: when the state directory cannot be written the
// journal keeps the state in memory, says so once in the log, reports it
// through Persistent and Err (a metric, and a lost probe for the stepdown
// server), and tries again every RetryInterval and at the next event. A
// last line left by a crash in the middle of a write is completed when only
// its newline is missing, else cut off; lines past MaxLineBytes and values
// no run writes are skipped with a warning naming the line.
package journal
