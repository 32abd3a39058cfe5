// Package timesources is the registry of the time sources clockwatch reads:
// chronyd, ntpd, the independent NTP probes, ptp4l, systemd-timesyncd,
// VMClock, the peers and the kernel. Each source is one field of Sections
// (its section of the configuration file, which the configuration embeds)
// and one Register entry in Registry; the daemon builds the enabled ones
// into Members and hands that one list to everything that asks about
// sources (the metrics registry, the task group, the stepdown feed, the
// bounded-time segment, the undisciplined-host warning, the systemd status
// line), and `clockwatch status` asks the same list for one poll each.
// Nothing outside this package names a source to decide what to do with it.
// docs/architecture.md ("Adding a source") says what a new source touches.
package timesources
