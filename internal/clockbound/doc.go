// Package clockbound is the segment in AWS ClockBound's shared memory format
// (version 2) that clockwatch writes its bound on the clock's error to, so
// that lease code reads "what time is it, at worst?" from memory, with the Go
// reader in stepdown/boundedtime or ClockBound's own C and Rust clients.
//
// It holds the format and its writer (Segment, Record: the seqlocked store,
// the checks that the file is still the one mapped), the clock as_of is read
// from (CLOCK_MONOTONIC_COARSE) with void_after's distance, and the
// clockbound section of the configuration. What keeps the segment up to date
// (the announcer's transport that judges the bound and writes) is
// internal/transport/segment.
package clockbound
