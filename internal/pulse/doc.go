// Package pulse runs the daemon's periodic work on shared ticks, one
// goroutine per period, and lets a period rest while none of its work is
// due.
//
// Idle, a wake-up of the process costs far more than the work it does: on the
// development VM a timer that wakes a goroutine costs 100–200 µs of CPU (the
// runtime wakes a second thread to look for work, its monitor thread, and the
// netpoller again when the timer is re-armed), the clockbound segment's write
// about 1 µs. The work that may run every second (the stepdown policy's feed,
// the socket's heartbeat while a subscriber listens) shares one ticker and
// goroutine; and while no subscriber listens and chronyd's polls feed the
// policy, nothing needs it every second: the period rests (EveryWhile, up to
// Rest) until an admission wakes it (Wake). The clockbound segment's 4 s
// rewrite is a period of its own. internal/daemon's TestIdleWakeups counts
// the idle daemon's wake-ups: 0.67–0.71 a second next to a chronyd, none of
// them every second (1.5–1.6 before the rests, one pulse every second).
package pulse
