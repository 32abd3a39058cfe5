// Package redislock is the third incident in miniature (docs/incident-replay.md):
// a daily reconciliation job that six workers race for with a Redis lock,
// SET comp:lock:recon:<date> <uuid> NX PX 30000, the winner paying every
// unreconciled order once into PostgreSQL. When the Redis master dies before
// it replicated the lock, Sentinel promotes a replica that never saw it, a
// second worker takes the "same" lock, and both pay.
//
// A Worker can guard its payments with a fence (stepdown.Fence): an epoch
// from a PostgreSQL sequence, or, to show why not, from a Redis INCR next to
// the lock, claimed before the job reads its work and checked in every
// payment's transaction.
//
// A Worker can also watch the clock of the lock server's node (PeerWatch:
// clockwatch's watch_peer through this node's clockwatch): a forward step
// there expires the lock at once, and the worker stops before its next
// payment when it hears of it.
//
// Subpackages: proxy is the TCP proxy that stalls or cuts a link; replay
// runs the experiment with a real Redis master, two replicas, three Sentinels
// and a real PostgreSQL on loopback; stepvm replays the forward step in a
// qemu guest.
package redislock
