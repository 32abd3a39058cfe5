// Package journal keeps clockwatch's history across restarts: an
// append-only, size-bounded JSON-lines journal of step events, fsync'd per
// event, and the clock epoch and sequence with the boot id, written
// atomically, so that the epoch never goes back.
//
// Nothing here is fatal: when the state directory cannot be written the
// journal keeps the state in memory, says so once in the log, reports it
// through Persistent (a metric), and tries again at the next event. A torn
// last line, left by a crash in the middle of a write, is cut off when the
// journal is opened and skipped with a warning when it is read.
package journal
