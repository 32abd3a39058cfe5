// Package boundedtime reads the bounded-time segment clockwatch publishes
// (by default /run/clockwatch/clockbound/shm0): the current time as an
// interval [earliest, latest] that true time is within, and a status that
// says whether the interval can be trusted. It imports only the standard
// library, like package stepdown, so lease code can use it without
// clockwatch's dependencies.
//
// The segment is AWS ClockBound's shared memory format version 2 (80 bytes,
// native byte order, a seqlock generation), so this package also reads the
// segment of a ClockBound daemon, and ClockBound's C and Rust clients read
// clockwatch's. Reading costs no system call: Now maps the segment once and
// then reads memory and time.Now.
//
// The stepdown socket and this segment are two transports of the same
// announcement. The socket pushes: subscribe once and release a lease the
// moment a stepdown arrives. The segment is pulled: ask on every renewal and
// every write whether the lease is surely still yours (SurelyBefore).
// docs/bounded-time.md in the repository says when to use which.
package boundedtime
