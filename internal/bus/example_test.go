package bus_test

import (
	"fmt"

	"github.com/clockwatch/clockwatch/internal/bus"
)

// A subscriber (the daemon's stepdown feed, say) takes a buffered subscription and
// reads until it is done; the publisher never waits for it.
func Example() {
	b := bus.New[string]()
	sub := b.Subscribe(16)
	b.Publish("step -12.4s")
	b.Publish("step +1h")
	sub.Close() // closes the channel after what is buffered
	for e := range sub.C() {
		fmt.Println(e)
	}
	fmt.Println("dropped:", sub.Dropped())
	// Output:
	// step -12.4s
	// step +1h
	// dropped: 0
}
