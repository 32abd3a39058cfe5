// Package wallclock is the analyzer behind clockwatch-vet: it finds the places
// where the wall clock decides an interval, a timeout, a deadline, a renewal or
// an expiry. Each of them is a step-back bomb: when chronyd or an operator
// steps the clock back by 12 s, an elapsed time computed from two wall-clock
// readings comes out 12 s short (or negative) and a deadline moves 12 s later.
//
// It reports
//   - two local wall-clock readings (time.Now().Unix, UnixMilli, UnixMicro,
//     UnixNano) subtracted or compared as integers, directly or through local
//     variables, struct fields, package variables, atomics, maps, channels,
//     parameters and results of functions (across packages through facts);
//   - a time.Time stripped of its monotonic reading (Round, Truncate, UTC,
//     Local, In, AddDate, time.Unix* of a wall-clock integer, a Format/Parse
//     or Marshal/Unmarshal round trip) and then used with Sub, Since, Until,
//     Before, After, Compare or Equal against another local reading.
//
// A local reading is a value that comes from time.Now() in the program being
// analysed. Values from elsewhere (a token's exp, a time parsed from input, a
// struct field with a tag, which is how decoded and persisted data arrives) are
// absolute times: comparing with them is what a wall clock is for, and is not
// reported. Neither are logging, formatting, IDs, tickers and contexts, which
// never subtract two readings.
//
// The analysis is flow-insensitive: a variable or field that is ever assigned
// a local reading is one. A reviewed line is silenced with a directive on the
// line itself or the line above:
//
//	//clockwatch:wallclock-ok the TTL is persisted and read after a restart
//
// The reason is required; a directive without one is reported.
package wallclock
