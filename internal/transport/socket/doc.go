// Package socket is clockwatch's side of the stepdown socket: it listens on a
// unix stream socket (or one handed over by systemd), greets each subscriber
// with the current state, fans stepdown, resume and heartbeat messages out to
// every subscriber without letting a slow one delay the others, accepts acks
// and drill requests, and exports metrics about all of it.
//
// It is one transport of the daemon's announcer (package announce),
// subscribed in line (announce.InLine) by New: the announcer decides,
// numbers and persists; the Server only tells its clients. It keeps the
// state of the last update it broadcast and greets and beats from it under
// its own mutex, so that a hello's seq is the last event sent before it and
// nothing it does with its mutex held calls into the announcer. The daemon creates the announcer, feeds it, and creates
// a Server only when stepdown.enabled is true; it opens the socket early
// with Listen and runs it as a task with Run. The wire format is package
// stepdown's, documented in docs/stepdown-protocol.md.
//
// A subscriber at rest costs about 1 KiB (TestSubscriberMemory): no
// goroutine of its own. One epoll instance (inputPoller) watches every
// client's input; a broadcast writes to each socket directly, and a writer
// goroutine runs for a client only while messages wait for it.
package socket
