// Package server is clockwatch's side of the stepdown socket: it listens on a
// unix stream socket (or one handed over by systemd), greets each subscriber
// with the current state, fans stepdown, resume and heartbeat messages out to
// every subscriber without letting a slow one delay the others, accepts acks
// and drill requests, and exports metrics about all of it.
//
// Two parts: the Announcer runs package policy, numbers its events, counts
// them, keeps the policy's state across restarts (stepdown.json) and hands
// each announcement to its subscribers; the Server is the unix-socket
// transport, one subscriber of its Announcer (another transport subscribes
// through Server.Announcer without touching socket code). The daemon feeds
// the Server through its input methods (Step, Suspended, Readings, Reading,
// ProbeOK and ProbeFailed), opens the socket early with Listen, and runs it
// as a task with Run. The wire format is package stepdown's, documented in
// docs/stepdown-protocol.md.
package server
