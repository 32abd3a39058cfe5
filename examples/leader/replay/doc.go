// Package replay runs the incident in miniature and measures it: a real etcd
// and a real PostgreSQL on loopback, node A and node D of the leader service,
// node A's lease keepalive stalled for longer than the TTL through a paused
// proxy while its wall clock (the service's own view of it, never this
// machine's) steps back and a step event reaches its clockwatch. Four runs
// switch fencing and clockwatch on and off; Format prints the table of
// docs/incident-replay.md.
package replay
