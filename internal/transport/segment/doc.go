// Package segment is the announcer's bounded-time transport: it keeps the
// segment of internal/clockbound (AWS ClockBound's shared memory format)
// up to date with clockwatch's bound on the clock's error.
//
// The bound comes from the authoritative time sources' normalised readings
// (timesource.Reading) and grows by the configured maximum drift between
// their updates; the status follows the stepdown announcement, so that a
// step, a suspend or a drill makes the segment "disrupted" in the same
// instant the stepdown socket says "stepdown". The segment is rewritten when
// its figures change and every clockbound.interval (4 s): readers take a
// segment older than 5 s for free running.
package segment
