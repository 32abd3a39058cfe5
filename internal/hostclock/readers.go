package hostclock

import "github.com/clockwatch/clockwatch/internal/kernel"

// ClockReader takes one Sample.
type ClockReader interface {
	ReadClocks(*kernel.Sample) error
}

// TimexReader reads the kernel's clock discipline state. Implementations
// never change it.
type TimexReader interface {
	ReadTimex() (kernel.RawTimex, error)
}
