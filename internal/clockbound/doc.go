// Package clockbound publishes clockwatch's bound on the clock's error as a
// segment in AWS ClockBound's shared memory format (version 2), so that lease
// code reads "what time is it, at worst?" from memory, with the Go reader in
// stepdown/boundedtime or ClockBound's own C and Rust clients.
//
// The bound comes from the authoritative time sources' normalised readings
// (timesource.Reading) and grows by the configured maximum drift between
// their updates; the status follows the stepdown announcement, so that a
// step, a suspend or a drill makes the segment "disrupted" in the same
// instant the stepdown socket says "stepdown". The segment is rewritten when
// its figures change and every clockbound.interval (4 s): readers take a
// segment older than 5 s for free running.
package clockbound
