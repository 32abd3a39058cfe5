// Command stepwatch is the harness's own proof of the mechanism clockwatch
// relies on, run inside the test VM: a timerfd on CLOCK_REALTIME armed with
// TFD_TIMER_ABSTIME|TFD_TIMER_CANCEL_ON_SET, read through Go's netpoller,
// fails with ECANCELED each time the kernel sets the clock.
//
//	stepwatch [-blocking] -ready FILE -wakes FILE
//
// With -blocking the timerfd is read in a blocking system call instead of
// through the netpoller, which leaves out the Go runtime's share of the wake
// latency.
//
// After arming it creates the ready file. On every ECANCELED wake it reads
// CLOCK_MONOTONIC, then the REALTIME−BOOTTIME gap, prints a result line (kind
// "wake", see package guest) with the gap before and after, re-arms, and
// writes the number of wakes so far to the wakes file, so a script can wait
// for a step to be seen before making the next one. It runs until killed.
//
// It only reads clocks, but checks guest.CheckTestVM like clockstep does: it
// belongs to the VM and has no business on a host.
package main
