package replay

import (
	"context"
	"fmt"

	"github.com/clockwatch/clockwatch/examples/redislock"
	"github.com/clockwatch/clockwatch/stepdown"
)

// equalEpochFence is the guard not to write: it lets a claim or a write
// through when its epoch is at least the newest (>=), the one-statement form
// that lets a holder write again and again with its epoch. With epochs that
// are never handed out twice (a sequence) it is as good as stepdown.Fence;
// with a counter that went back (a Redis INCR lost in a failover) two
// holders carry the same epoch and it lets both write.
type equalEpochFence struct{}

var _ redislock.Guard = equalEpochFence{}

func (equalEpochFence) Claim(ctx context.Context, db stepdown.Execer, resource string, epoch int64) error {
	return affected(ctx, db, "claim", `INSERT INTO `+stepdown.DefaultFenceTable+` AS f (name, epoch) VALUES ($1, $2)
		ON CONFLICT (name) DO UPDATE SET epoch = excluded.epoch WHERE excluded.epoch >= f.epoch`, resource, epoch)
}

func (equalEpochFence) Check(ctx context.Context, tx stepdown.Execer, resource string, epoch int64) error {
	return affected(ctx, tx, "check", `UPDATE `+stepdown.DefaultFenceTable+` SET writes = writes + 1
		WHERE name = $1 AND epoch <= $2`, resource, epoch)
}

func affected(ctx context.Context, db stepdown.Execer, op, q, resource string, epoch int64) error {
	res, err := db.ExecContext(ctx, q, resource, epoch)
	if err != nil {
		return fmt.Errorf("%s of %q with epoch %d: %w", op, resource, epoch, err)
	}
	n, err := res.RowsAffected()
	if err != nil {
		return fmt.Errorf("%s of %q with epoch %d: %w", op, resource, epoch, err)
	}
	if n != 1 {
		return &stepdown.FencedError{Op: op, Resource: resource, Epoch: epoch}
	}
	return nil
}
