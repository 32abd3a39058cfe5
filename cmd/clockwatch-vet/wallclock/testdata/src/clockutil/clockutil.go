// Package clockutil is a helper of the kind many code bases have: its
// readings reach other packages through facts.
package clockutil

import "time"

// NowMillis is a wall-clock reading in milliseconds.
func NowMillis() int64 { return time.Now().UnixMilli() } // want NowMillis:`returns wallint`

// Lease is a lease as a lock client keeps it.
type Lease struct {
	ExpireAt int64 // want ExpireAt:`holds wallint`
}

// Grant makes a lease that expires ttl milliseconds from now.
func Grant(ttl int64) Lease { return Lease{ExpireAt: NowMillis() + ttl} }
