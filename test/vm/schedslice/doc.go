// Command schedslice gives every thread of a process EEVDF's custom slice
// (sched_setattr's sched_runtime for SCHED_OTHER, Linux 6.12 and later), for
// TestPushUnderLoadInVM's slice phases: a woken task with a shorter slice
// than the running one may preempt it sooner. It keeps each thread's policy
// and nice, reads the slice back, and fails when the kernel did not keep it
// (before 6.12 sched_runtime is ignored for SCHED_OTHER).
package main
