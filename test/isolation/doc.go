// Command isolation measures what other local users can do to one
// subscriber's events (issue 32, item 1). It runs a clockwatch binary with
// its stepdown socket open to everyone (mode 0666, as for an application
// in the socket's group) and HTTPS on loopback, subscribes as root, and
// runs phases one after another in one run: a baseline, then each flood,
// then all floods together, then the baseline again. Every flood is a child
// process of this command run as another uid (65534 and up: no user need
// exist), at the same nice value as the daemon:
//
//   - connect: four goroutines connect to the stepdown socket and close in a
//     loop, beside as many idle connections as admission lets the uid hold;
//   - silent: 2,000 subscribers over 20 uids that never read a byte (their
//     buffers fill, the daemon drops them as laggards, they come back);
//   - http: 64 keep-alive connections asking for /healthz in a loop;
//   - scrape: 64 keep-alive connections asking for /metrics in a loop;
//   - tls: 16 goroutines opening TLS connections and closing them after the
//     handshake, in a loop.
//
// In each phase the root subscriber asks for drills one after another (a
// short hold each) and records two figures per drill: from sending the
// drill to reading its stepdown (the input path and the announcement), and
// from the resume's mono_ns (when the daemon's timer made it) to reading it
// (the announcement alone); and every tenth drill, the time a new root
// client takes from connect to hello on the stepdown socket and on the
// reserved one beside it (which the floods' uids cannot reach). The root
// subscriber itself is on the stepdown socket, as an application is. It
// prints, per phase, p50, p99 and max of the drills and resumes with their
// ratio to the first baseline, p50 and max of the hellos, and the load
// averages.
//
// Then the split, which tells clockwatch's share of those figures from the
// scheduler's: beside the drilling subscriber (at the harness's nice value,
// 0 as run) a second root subscriber at -observer-nice (-10) that only
// reads, with the same two figures for the same drills; and a control that
// involves no clockwatch: a writer at the daemon's nice value writes its
// CLOCK_MONOTONIC into two unix socket pairs every 25 ms, read through Go's
// poller by a reader at nice 0 and one at -observer-nice. A control
// reader's latency is the wake-up its nice value gets under the flood: the
// floor no daemon can beat for a subscriber at that nice value. The drill
// is also split at its stepdown's mono_ns (when the daemon took the drill):
// request → made is the daemon's input path, made → read the announcement.
// -slow lists each drill slower than it, split, with the observer's made →
// read of the same stepdown.
// scripts/bench-isolation.sh builds the binary and runs it as root (make
// bench-isolation).
package main
