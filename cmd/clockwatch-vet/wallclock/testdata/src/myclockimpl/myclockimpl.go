package myclockimpl // want package:`\(myclock.Ticks\).Tick returns wallint`

// Package myclockimpl implements myclock.Ticks with wall-clock seconds: a
// package fact tells the packages that import this one (the doc comment is
// below the clause because analysistest wants package facts on line 1).

import (
	"time"

	"myclock"
)

// Wall ticks in wall-clock seconds.
type Wall struct{}

// Tick is a wall-clock reading.
func (Wall) Tick() int64 { return time.Now().Unix() } // want Tick:`returns wallint`

var _ myclock.Ticks = Wall{}
