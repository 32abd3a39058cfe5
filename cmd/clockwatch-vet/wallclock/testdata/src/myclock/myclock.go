// Package myclock is a project's own clock behind its own interface, in
// milliseconds: the interface's NowMillis is learned from the implementation
// (an object fact on the interface method).
package myclock

import "time"

// Clock is the project's clock.
type Clock interface {
	NowMillis() int64 // want NowMillis:`returns wallint`
}

type system struct{}

func (system) NowMillis() int64 { return time.Now().UnixMilli() } // want NowMillis:`returns wallint`

// System is the clock of production.
func System() Clock { return system{} }

// Ticks is an interface of this package that no type here implements with a
// reading: see myclockimpl.
type Ticks interface {
	Tick() int64
}
