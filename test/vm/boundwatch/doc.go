// Command boundwatch reads clockwatch's bounded-time segment inside the test
// VM, with the client library (stepdown/boundedtime), every millisecond. For
// every change of status (or of the segment's VMClock marker) it reads CLOCK_MONOTONIC, appends a JSON line to a
// file the guest script can wait on, and prints a result line (kind
// "bound_status", see package guest).
//
//	boundwatch [-path PATH] -out FILE
//
// It waits 30 s for the segment to appear and runs until it is killed.
package main
