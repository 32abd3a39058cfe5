// Package timesyncd reads systemd-timesyncd's state over D-Bus
// (org.freedesktop.timesync1 on the system bus: the server it talks to, its
// poll interval, the kernel frequency it set and the last NTP reply it
// accepted, what `timedatectl timesync-status` shows) with
// github.com/godbus/dbus/v5, and turns it into timesource.Reading.
//
// timesyncd publishes no offset: the offset, delay and error bound are
// computed here from the four timestamps of its last NTP exchange. It never
// says it lost its server either (the last reply stays on the bus): the
// reading stops being synchronised when that reply is older than two of
// timesyncd's poll intervals plus its first retry.
//
// Finding timesyncd costs one D-Bus call per poll and never starts it (the
// calls carry NO_AUTO_START: the bus would otherwise activate timesyncd on a
// machine that runs chronyd). In mode auto an absent timesyncd (no system
// bus, or nobody owns the name) is a state, not an error: nothing is logged
// above debug level and nothing is counted as a failure. Poller is the
// long-running task; nothing here imports Prometheus.
package timesyncd
