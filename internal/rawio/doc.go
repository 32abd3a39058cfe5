// Package rawio reads and writes a connected datagram socket with raw
// system calls, waiting in Go's network poller as net's own Read and Write
// do (deadlines included).
//
// Why: a read or write through the net package is a system call through
// the syscall package, which wakes the Go runtime's monitor thread (sysmon)
// when it sleeps, and sysmon then polls in 20 µs steps until every Go
// processor is idle again. On the idle daemon that made each chronyd poll
// (three round trips for 8 sources) cost 25–50 thread wake-ups, most of its
// idle cost once the pulse waited on the kernel's timer (docs/performance.md,
// "Idle: the kernel's timer"). A datagram read or write on a ready socket
// never blocks, so the scheduler need not hear of it.
package rawio
