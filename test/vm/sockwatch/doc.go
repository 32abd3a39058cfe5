// Command sockwatch is a raw subscriber of clockwatch's stepdown socket, run
// inside the test VM: it connects, and for every line the server sends
// (heartbeats aside) reads CLOCK_MONOTONIC, appends the line to a file the
// guest script can wait on, and prints a result line (kind "stepdown_msg",
// see package guest) with the message and the time it arrived. It speaks the
// wire format directly, without the client library, so that the test sees
// exactly what any client would.
//
//	sockwatch [-socket PATH] [-tag TAG] -out FILE
//
// It retries the connection for 30 s (the daemon may still be starting) and
// runs until the server closes the connection or it is killed.
package main
