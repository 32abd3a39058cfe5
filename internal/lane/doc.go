// Package lane is the one queue through which the daemon runs work that
// other local users can cause (HTTP requests and TLS handshakes, connections
// to the stepdown socket from unprivileged uids): one turn at a time, the
// kinds of work served in turn, and no more than a share of the time, so
// that such work never holds more than one CPU and leaves the clock's event
// path a CPU to run on (docs/stepdown-protocol.md, "Isolation").
package lane
