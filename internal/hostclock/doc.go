// Package hostclock reads the host's clocks: the five kernel clocks sampled
// back to back (ClockReader), the kernel's clock discipline state from a
// read-only adjtimex (TimexReader), and the kernel's clock-set notifications
// (ClockSetWatcher). The real readers live in the _linux.go files; their
// fakes for tests are package hostclocktest. The values are data of package
// kernel; nothing here imports Prometheus or judges them.
package hostclock
