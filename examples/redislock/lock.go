package redislock

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/redis/go-redis/v9"
)

// Redis is what the lock needs of a client: *redis.Client, a
// Sentinel-aware one from redis.NewFailoverClient included.
type Redis interface {
	redis.Cmdable
	Do(ctx context.Context, args ...any) *redis.Cmd
}

var _ Redis = (*redis.Client)(nil)

// Lock is the article's lock: one key on the Redis master, taken with
// SET key owner NX PX ttl and released only by its owner.
type Lock struct {
	rdb   Redis
	key   string
	owner string
	ttl   time.Duration
}

// NewLock returns the lock key for owner (a UUID per worker).
func NewLock(rdb Redis, key, owner string, ttl time.Duration) *Lock {
	return &Lock{rdb: rdb, key: key, owner: owner, ttl: ttl}
}

// Key is the lock's key.
func (l *Lock) Key() string { return l.key }

// TryAcquire runs SET key owner NX PX ttl: true when the master answered OK,
// false when the key exists. OK means the key is in that master's memory,
// nothing more: no replica has it yet.
func (l *Lock) TryAcquire(ctx context.Context) (bool, error) {
	err := l.rdb.Do(ctx, "SET", l.key, l.owner, "NX", "PX", l.ttl.Milliseconds()).Err()
	switch {
	case err == nil:
		return true, nil
	case errors.Is(err, redis.Nil):
		return false, nil
	}
	return false, fmt.Errorf("SET %s NX PX %d: %w", l.key, l.ttl.Milliseconds(), err)
}

// release deletes the key only if this owner still holds it.
var release = redis.NewScript(`
if redis.call("GET", KEYS[1]) == ARGV[1] then
	return redis.call("DEL", KEYS[1])
end
return 0`)

// Release deletes the key if owner still holds it; false when it did not
// (it expired, another owner holds it, or it evaporated in a failover).
func (l *Lock) Release(ctx context.Context) (bool, error) {
	n, err := release.Run(ctx, l.rdb, []string{l.key}, l.owner).Int()
	if err != nil {
		return false, fmt.Errorf("releasing %s: %w", l.key, err)
	}
	return n == 1, nil
}

// IncrEpoch increments the counter next to the lock (key + ":epoch") and
// returns it: the epoch a Redis-only design would fence with. It lives on
// the same master as the lock and is lost with it.
func (l *Lock) IncrEpoch(ctx context.Context) (int64, error) {
	n, err := l.rdb.Incr(ctx, l.key+":epoch").Result()
	if err != nil {
		return 0, fmt.Errorf("INCR %s:epoch: %w", l.key, err)
	}
	return n, nil
}
