// Package stepvm replays the forward step of docs/incident-replay.md in a
// qemu guest (test/vm): a Redis master and clockwatch in the guest, its
// clock stepped +31 s. In the guest alone, the key is gone at once, a second
// worker takes the lock, and clockwatch on the master's node records the
// step. Then from the host, as another node: a clockwatch there measures the
// guest's as its peer, and two workers run the job against the guest's Redis
// and a PostgreSQL on the host, once with no defence, once watching the
// master's node's clock (redislock.PeerWatch, clockwatch's watch_peer) and
// once with the fence; the test counts the orders paid twice in each.
package stepvm
