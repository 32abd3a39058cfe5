// Package step detects discontinuities of the wall clock: steps forward and
// backward (chrony's makestep, an admin's date -s, a VM resumed with a
// corrected clock), leap seconds, and resume from suspend.
//
// The Detector is a pure function of clock samples and clock-set marks: it
// reads no clock and starts nothing, so every scenario is a table test or a
// replayed trace. It watches REALTIME−BOOTTIME. On Linux both clocks tick at
// the same disciplined rate (a slew, even chrony's fastest at 83,333 ppm,
// changes the rate of MONOTONIC and BOOTTIME too), and suspend advances both
// by the same amount, so the gap moves only when the wall clock is set. A
// change of the gap larger than the read uncertainty is therefore a step when
// the kernel also said the clock was set (a mark from the timerfd watcher),
// and larger than the read uncertainty plus a configurable slew allowance
// when only sampling saw it.
//
// The Sampler is the task that feeds the Detector: it samples on a ticker and
// immediately after every mark, and hands events to non-blocking sinks (the
// bus, the metrics collector). The Collector turns events and the Sampler's
// gauges into Prometheus metrics.
package step
