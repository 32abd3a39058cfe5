// Package pulse runs the daemon's periodic work on one goroutine and one
// timer, calling work of different periods on the same wake-ups (a call
// may come up to half its wait early to share one), and lets work rest
// while it is not due.
//
// Idle, a wake-up of the process costs far more than the work it does: on
// the development VM each costs about ten thread wake-ups (the runtime's
// monitor thread, sysmon, sleeps in 20 µs steps while a P is busy), the
// clockbound segment's write about 1 µs. So the segment's 4 s rewrite
// (ClockBound's 5 s grace sets it), the stepdown feed's rest, the
// heartbeat's and the idle clock samples share its wake-ups.
// internal/daemon's TestIdleWakeups counts them: the pulse wakes every 4 s
// next to a chronyd, nothing else periodic but chronyd's polls.
package pulse
