// Package replay runs the Redis lock experiment of docs/incident-replay.md:
// a real Redis master, two replicas and three Sentinels on loopback (the
// replication link through a proxy that can stall), a real PostgreSQL, six
// workers, the master killed 180 ms after the lock was taken, and the payments
// booked twice counted for each defence.
package replay
