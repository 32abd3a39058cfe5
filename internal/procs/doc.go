// Package procs gives the daemon's Go code a second processor (GOMAXPROCS)
// while work that other local users can cause competes with the stepdown
// announcements, and takes it back once that work has stopped.
//
// One processor is the daemon's default: idle, a second one triples its
// thread wake-ups (74 context switches in 90 s against 218, measured on
// the development VM: every hand-off between goroutines wakes an idle
// processor's thread to look for work). But with one processor, an
// announcement waits for whatever goroutine holds it: a TLS handshake, a
// scrape's encoding, a burst of refused connections, the writes to
// thousands of subscribers. Go's scheduler looks at the network, where a
// drill or a step's wake-up waits, only between goroutines. So the work
// that floods can cause says so (Procs.Busy: HTTP beyond its pace, a
// refused stepdown connection, an event written to 512 or more subscribers),
// and the daemon runs with two processors until none has for Hold.
// docs/performance.md, "Other local users", has the measurements.
package procs
