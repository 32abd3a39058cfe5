// Package sched gives the daemon its scheduling priority (its nice value) at
// start, on every thread, where the process has the right.
package sched
