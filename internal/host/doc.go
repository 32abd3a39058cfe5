// Package host is clockwatch's one way to each piece of host state read in
// more than one place: CLOCK_MONOTONIC (and any clock by id), the boot id,
// and the sockets systemd passes (socket activation). Everything else that
// needs them calls this package, so that there is one reader to fix and one
// fake to give a test (package hostclocktest for the clocks and adjtimex). It
// imports the standard library only, so that package sdnotify may use it.
package host
