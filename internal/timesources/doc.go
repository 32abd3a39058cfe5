// Package timesources builds and runs everything clockwatch reads from
// outside the kernel about time: the chrony, ntpd, ptp4l and timesyncd
// pollers and the independent NTP probes, from their configuration sections,
// and hands the daemon the collectors to register and one task to run. It
// exists so that the daemon's wiring is one call.
package timesources
