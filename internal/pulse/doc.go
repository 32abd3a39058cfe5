// Package pulse runs the daemon's periodic work on one goroutine and one
// timer, calling work of different periods on the same wake-ups (a call
// may come up to half its wait early to share one), and lets work rest
// while it is not due.
//
// Idle, a wake-up of the process costs far more than the work it does: on
// the development VM a Go timer's 4 s wake-up cost about ten thread
// wake-ups (the runtime's monitor thread, sysmon, woke on time and polled
// in 20 µs steps while the thread that runs timers woke milliseconds late),
// the clockbound segment's write about 1 µs. So the pulse waits on the
// kernel's timer (internal/ktimer: one thread wake-up, its periodic work's
// system calls raw, package host), and the segment's 4 s rewrite
// (ClockBound's 5 s grace sets it), the stepdown feed's rest, the
// heartbeat's and the idle clock samples share its wake-ups.
// internal/daemon's TestIdleWakeups counts them: the pulse wakes every 4 s
// next to a chronyd, nothing else periodic but chronyd's polls and the
// looks for absent sources, and no Go timer.
package pulse
