// Command clockstep steps CLOCK_REALTIME by an exact signed amount, inside
// clockwatch's test VM only. It is the "chrony stepped the clock" of the
// end-to-end tests.
//
//	clockstep [-method settime|setoffset] DELTA   e.g. -12.4s, +3600s, -250ms
//	clockstep -gap                                print REALTIME−BOOTTIME
//
// It prints one result line (see package guest) with the requested delta, the
// REALTIME−BOOTTIME gap read just before and just after (their difference is
// the step the kernel applied), and CLOCK_MONOTONIC just before and just after
// the call that set the clock, from which the tests measure how long a
// watcher took to notice.
//
// The settime method reads REALTIME, adds DELTA and sets the sum with
// clock_settime (like date -s, to the nanosecond); the time between the read
// and the set, microseconds, is lost from the step. The setoffset method asks
// the kernel to add DELTA itself with clock_adjtime(ADJ_SETOFFSET), as chronyd
// does when it steps, and is exact.
//
// SAFETY: it refuses to run, and exits 3, unless guest.CheckTestVM passes: the
// clock of the machine the tests run on must never change.
package main
