// Package pulse runs the daemon's periodic work on shared ticks, from one
// goroutine.
//
// Idle, a wake-up of the process costs far more than the work it does: on the
// development VM a timer that wakes a goroutine costs 100–200 µs of CPU (the
// runtime wakes a second thread to look for work, its monitor thread, and the
// netpoller again when the timer is re-armed), the clockbound segment's write
// about 1 µs. The work that may run every second (the segment's look at its
// figures, the stepdown policy's feed, the socket's heartbeat while a
// subscriber listens), each on a ticker and goroutine of its own, woke the
// process once a second each; on the daemon's one Pulse it shares one
// periodic timer and one goroutine: one wake-up a second
// (internal/daemon's TestIdleWakeups counts them).
package pulse
