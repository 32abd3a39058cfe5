// Package stepvm replays the forward step of docs/incident-replay.md in a
// qemu guest (test/vm): a Redis master and clockwatch in the guest, a lock
// taken, the guest's clock stepped +31 s. The key is gone, a second worker
// takes the lock, and clockwatch on the master's node records the step. The
// lock holders hearing of it on their own nodes is the peer watch (issue 34),
// not here yet.
package stepvm
