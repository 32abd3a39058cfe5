// Command clockstep steps CLOCK_REALTIME by an exact signed amount, inside
// clockwatch's test VM only. It is the "chrony stepped the clock" of the
// end-to-end tests.
//
//	clockstep [-method settime|setoffset] [-wait CMD] [-first N] [METHOD:]DELTA...
//	clockstep -gap    (print REALTIME−BOOTTIME)
//
// DELTA is a Go duration such as -12.4s, +3600s or -250ms (put -- before the
// first negative one); METHOD: overrides -method for one step. Steps are made
// in order; after each, the -wait command (sh -c) runs with $CW_STEP set to
// the step's number, counted from -first, and must exit 0 before the next
// step: the script waits there until the program under test has seen the
// step. Making many steps in one run saves a Go program start per step.
//
// For each step it prints a result line (see package guest) with the
// requested delta, the REALTIME−BOOTTIME gap read just before and just after
// (their difference is the step the kernel applied), and CLOCK_MONOTONIC just
// before and just after the call that set the clock, from which the tests
// measure how long a watcher took to notice.
//
// The settime method reads REALTIME, adds DELTA and sets the sum with
// clock_settime (like date -s, to the nanosecond); the time between the read
// and the set is lost from the step: microseconds, or milliseconds when the
// host deschedules the VM in between. The setoffset method asks
// the kernel to add DELTA itself with clock_adjtime(ADJ_SETOFFSET), as chronyd
// does when it steps, and is exact.
//
// SAFETY: it refuses to run, and exits 3, unless guest.CheckTestVM passes: the
// clock of the machine the tests run on must never change.
package main
