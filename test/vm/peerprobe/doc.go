// Command peerprobe is a guest program of test/vm for the fleet test
// (TestFleetPeersInVM). "peerprobe HOST:PORT" makes one timestamp exchange
// with a clockwatch peer's responder (internal/peers), as a peer makes it,
// and exits 0 when answered, 1 when not (a timeout: what a source outside
// peers.allow gets). "peerprobe -sync HOST:PORT" sets this guest's clock
// from an NTP server (the test's, on the host), the least-rtt of eight
// samples, with clock_adjtime ADJ_SETOFFSET: qemu starts a guest's clock
// from its RTC, to the second, and three guests must start within
// milliseconds of each other. It refuses to run outside the test VM.
package main
