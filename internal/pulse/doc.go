// Package pulse gives the daemon's periodic tasks ticks aligned to whole
// multiples of their period on CLOCK_MONOTONIC, the clock Go's timers run on.
//
// Idle, a wake-up of the process costs far more than the work it does: on the
// development VM one timer firing costs about 200 µs of CPU (the runtime wakes
// a second thread to look for work, and its monitor thread), the clockbound
// segment's write about 1 µs. Tasks that must run every second (the segment,
// the stepdown policy's feed, the heartbeat while a subscriber listens) each
// on a ticker of their own wake the process once a second each; on aligned
// tickers they fire at the same instants and share one wake-up.
package pulse
