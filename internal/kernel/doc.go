// Package kernel holds the kernel's clocks and clock discipline state as
// data: one Sample of the five clocks, and adjtimex's Timex decoded. It
// reads nothing: internal/hostclock reads the host into these types, and the
// judges (internal/health) decide from them without depending on a source
// package.
package kernel
