// Package probe reads the host's time facts: the kernel clocks sampled back to
// back, and the kernel's clock discipline state from a read-only adjtimex.
//
// Every system call sits behind a small interface (ClockReader, TimexReader)
// so that the packages built on these facts test without privileges; the real
// readers live in the _linux.go files. Nothing here imports Prometheus: the
// exporter package turns these values into metrics.
package probe
