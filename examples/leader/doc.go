// Package leader is a small service that elects a leader with etcd and, while
// it leads, books ledger entries into PostgreSQL: the system of the incident
// clockwatch exists for, in miniature (docs/incident-replay.md).
//
// A Node campaigns with go.etcd.io/etcd/client/v3/concurrency. Its view of
// its own lease is judged with a configurable clock: the wall clock, as the
// incident's lock client did (a step back makes it believe in a lease etcd
// has already expired), or the monotonic clock. Two independent defences can
// be switched on: a ClockGuard (clockwatch's stepdown socket) that makes the
// leader stop writing, resign and close its session the moment its clock
// cannot be trusted, and a fencing token (the etcd revision at which it won)
// that the store checks on every write, so a deposed leader's writes are
// rejected rather than booked twice.
//
// Subpackages: proxy is the TCP proxy the experiment pauses to stall a node's
// lease keepalive; replay runs the experiment with a real etcd, a real
// PostgreSQL and real clockwatch daemons.
package leader
