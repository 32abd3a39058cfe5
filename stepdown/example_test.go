package stepdown_test

import (
	"context"
	"errors"
	"fmt"
	"log"
	"time"

	"github.com/clockwatch/clockwatch/stepdown"
)

// lockServer stands for a distributed lock service with leases.
type lockServer interface {
	Acquire(ctx context.Context, name string, lease time.Duration) (release func(), err error)
}

// doWork is the critical section: it must stop when ctx is cancelled.
func doWork(ctx context.Context) error {
	select {
	case <-ctx.Done():
		return context.Cause(ctx)
	case <-time.After(time.Second):
		return nil
	}
}

// A lock holder runs each critical section under a guard: the moment
// clockwatch announces a stepdown (or stops answering), the guard's context is
// cancelled, the work stops, and the lock is released before the lock server,
// judging by its own clock, hands it to someone else. The ack tells clockwatch
// how long the release took.
func Example_lockHolder() {
	ctx := context.Background()
	var locks lockServer // your lock client

	sub := stepdown.Subscribe(ctx, stepdown.Options{}) // /run/clockwatch/stepdown.sock
	for {
		// Never take a lock while the clock cannot be trusted.
		if err := sub.WaitOK(ctx); err != nil {
			log.Fatal(err)
		}
		guarded, endGuard := sub.Guard(ctx)
		release, err := locks.Acquire(guarded, "leader", 10*time.Second)
		if err != nil {
			endGuard()
			continue
		}
		err = doWork(guarded)
		release()
		endGuard()

		var sd *stepdown.StepdownError
		if errors.As(err, &sd) {
			fmt.Println("stepped down:", sd)
			if sd.State == stepdown.StateStepdown {
				sub.Ack(sd.Message.Seq) // released: tell clockwatch
			}
		}
	}
}
