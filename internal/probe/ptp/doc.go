// Package ptp reads linuxptp's ptp4l over its management interface, the
// unix datagram socket `pmc -u` talks to (/var/run/ptp4l by default): the
// port states, the offset from the master and the mean path delay, the
// grandmaster's identity, clock class and accuracy, the time properties
// (time traceable, leap second flags) and the steps removed.
//
// Requests are encoded with github.com/facebook/time/ptp/protocol and the
// replies decoded with it where it knows the TLV (TIME_PROPERTIES_DATA_SET
// it does not: this package decodes those four bytes itself). Around it the
// client adds what a daemon needs: a deadline on every request, a check of
// each reply's sequence number, one reply per port for port data sets,
// re-dialling after any error, and errors that say how to fix the problem
// (a domain mismatch, for one, makes ptp4l silent rather than refuse).
//
// Poller is the long-running task. With the address "auto" it looks for
// ptp4l's default socket on every poll and, while there is none, does
// nothing else and reports nothing: most nodes run no PTP. It keeps the
// last result, what changed when (port state, grandmaster), and turns it
// into a timesource.Reading. Nothing here imports Prometheus.
//
// phc2sys has no management interface of its own: its offset (system clock
// against the PHC) is not visible here. With software timestamping (ptp4l
// -S) ptp4l's offset is the system clock's; with hardware timestamping it
// is the PHC's, and the Reading says so in its Detail.
package ptp
