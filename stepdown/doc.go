// Package stepdown is the client side of clockwatch's stepdown socket, and the
// wire format both ends share. It imports only the standard library, so an
// application that holds locks or leases can use it without pulling in
// clockwatch's dependencies.
//
// clockwatch pushes one JSON object per line over a unix stream socket (by
// default /run/clockwatch/stepdown.sock): a hello on connect with the current
// state, a stepdown the moment the local clock cannot be trusted, a resume when
// it has been healthy for the hold-down period, and a heartbeat every second so
// a quiet agent can be told from a dead one. docs/stepdown-protocol.md in the
// repository describes the format in full.
//
// Subscribe keeps a subscription alive across daemon restarts and tracks the
// state; Subscription.Guard derives a context that is cancelled the moment the
// clock stops being trustworthy, which a lock holder wraps its critical section
// in. Dial gives the raw connection for tools that want each message. Fence
// is the data side's guard for a lock lost without its holder knowing (a
// failover, a step on the lock server's node): writes under a stale epoch are
// refused.
package stepdown
