package segment_test

import (
	"context"
	"errors"
	"fmt"
	"log"
	"time"

	"github.com/clockwatch/clockwatch/stepdown"
	"github.com/clockwatch/clockwatch/stepdown/boundedtime"
)

// leaseStore stands for a store that grants leases: Renew extends the lease
// and returns its new expiry, by the store's clock.
type leaseStore interface {
	Renew(ctx context.Context) (expiry time.Time, err error)
	Write(ctx context.Context, v string) error
}

// errLeaseUnsure ends holdLease when the lease may have expired.
var errLeaseUnsure = errors.New("lease may have expired")

// BEGIN holdLease (docs/bounded-time.md)

// holdLease writes values under a lease for as long as it surely holds it.
// The stepdown socket pushes: the guard's context is cancelled the moment
// clockwatch announces a stepdown, even in the middle of a write. The segment
// is pulled: before every write, the lease must surely not have expired, by
// the latest the true time can be.
func holdLease(ctx context.Context, sub *stepdown.Subscription, bt *boundedtime.Reader, store leaseStore, values <-chan string) error {
	guarded, endGuard := sub.Guard(ctx)
	defer endGuard()
	expiry, err := store.Renew(guarded)
	if err != nil {
		return err
	}
	for {
		select {
		case <-guarded.Done():
			return context.Cause(guarded) // a *stepdown.StepdownError: release at once
		case v, ok := <-values:
			if !ok {
				return nil
			}
			// Renew when less than half the lease is surely left.
			if ok, _ := bt.SurelyBefore(expiry.Add(-5 * time.Second)); !ok {
				if expiry, err = store.Renew(guarded); err != nil {
					return err
				}
			}
			if ok, err := bt.SurelyBefore(expiry); !ok {
				return fmt.Errorf("%w: %v", errLeaseUnsure, err)
			}
			if err := store.Write(guarded, v); err != nil {
				return err
			}
		}
	}
}

// END holdLease

// A lease holder takes both transports: the socket to be told at once, the
// segment to check on every write.
func Example_lease() {
	ctx := context.Background()
	var store leaseStore                               // your lease client (10 s leases)
	sub := stepdown.Subscribe(ctx, stepdown.Options{}) // /run/clockwatch/stepdown.sock
	bt, err := boundedtime.Open("")                    // /run/clockwatch/clockbound/shm0
	if err != nil {
		log.Fatal(err)
	}
	defer bt.Close()
	values := make(chan string)
	for {
		if err := sub.WaitOK(ctx); err != nil {
			log.Fatal(err)
		}
		err := holdLease(ctx, sub, bt, store, values)
		var sd *stepdown.StepdownError
		if errors.As(err, &sd) && sd.State == stepdown.StateStepdown {
			sub.Ack(sd.Message.Seq) // released: tell clockwatch
		}
		log.Printf("lease given up: %v", err)
	}
}
