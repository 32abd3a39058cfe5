// Package proxy is a loopback TCP proxy that can be paused: while paused it
// holds every byte in both directions without closing a connection, as a
// network partition does. The incident replay runs node A's etcd traffic
// through it to stall A's lease keepalive for longer than the TTL without
// touching this machine's clock.
package proxy
