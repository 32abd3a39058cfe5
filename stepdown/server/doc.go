// Package server is clockwatch's side of the stepdown socket: it listens on a
// unix stream socket (or one handed over by systemd), greets each subscriber
// with the current state, fans stepdown, resume and heartbeat messages out to
// every subscriber without letting a slow one delay the others, accepts acks
// and drill requests, and exports metrics about all of it.
//
// What to announce is decided by package policy; the daemon feeds the Server
// through its input methods (Step, Suspended, Chrony, or the finer Offset,
// Synchronized, ErrorBound, ProbeOK and ProbeFailed), opens the socket early
// with Listen, and runs it as a task with Run. The wire format is package
// stepdown's, documented in docs/stepdown-protocol.md.
package server
