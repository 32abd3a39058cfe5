// Package wallclock is the analyzer behind clockwatch-vet: it finds the places
// where the wall clock decides an interval, a timeout, a deadline, a renewal or
// an expiry. Each of them is a step-back bomb: when chronyd or an operator
// steps the clock back by 12 s, an elapsed time computed from two wall-clock
// readings comes out 12 s short (or negative) and a deadline moves 12 s later.
//
// It reports (category wallclock)
//   - two local wall-clock readings as integers (Unix, UnixMilli, UnixMicro,
//     UnixNano) subtracted or compared;
//   - a time.Time stripped of its monotonic reading (Round, Truncate, UTC,
//     Local, In, AddDate, time.Unix* of a wall-clock integer, a Format/Parse
//     or Marshal/Unmarshal round trip) used with Sub, Since, Until, Before,
//     After, Compare or Equal against another local reading, or passed to a
//     clock's Since or Until;
//
// and, in the lower-severity category wallclock-ambiguous (Config.Ambiguous,
// the -ambiguous flag), two stored readings compared outside a sort, a heap,
// a min or a max, and a reading met with a time.Time that an exported
// function receives from another package.
//
// A local reading comes from time.Now(), from the Now() time.Time of any
// interface or clock library (benbjohnson/clock, clockwork, k8s.io/utils/clock,
// ...), from a ticker or a timer, or from a project's own clock learned
// through facts from its implementations. Readings are followed through
// variables, fields (not those whose tag encodes them), atomics, maps (keys
// and values), containers, channels, function values, bytes and text, and
// parameters and results, across packages through facts. Values from
// elsewhere (a token's exp, a time parsed from input, a decoded field) are
// absolute times, and orderings (Less, sort comparators, min, max) and
// rebases (off := now - t; t += off) are not deadlines: none is reported.
//
// The analysis is flow-insensitive: a variable or field that is ever assigned
// a local reading is one. A reviewed line is silenced with a directive on the
// line itself or the line above:
//
//	//clockwatch:wallclock-ok the TTL is persisted and read after a restart
//
// The reason is required; a directive without one, or misspelt (a space after
// //), is reported (category wallclock-directive).
package wallclock
