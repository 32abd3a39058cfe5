// Package sdnotify speaks systemd's service notification protocol: it tells
// the service manager that clockwatch is ready, reloading or stopping, what
// its current status line is, and that it is still alive (the watchdog).
//
// The protocol is a datagram of newline-separated KEY=VALUE lines sent to the
// unix socket named by $NOTIFY_SOCKET (a path, or an abstract name written with
// a leading '@'). When $NOTIFY_SOCKET is unset, clockwatch does not run under
// systemd (or runs with Type=simple) and every call is a no-op, so callers
// never need to ask.
//
// The watchdog interval comes from $WATCHDOG_USEC, and counts only when
// $WATCHDOG_PID is unset or names this process. Watchdog is the task that
// pings at half that interval, but only while a health function says the
// daemon is doing its work: a daemon whose loops are stuck stops pinging and
// systemd restarts it. StatusReporter is the task that keeps the status line
// (the health verdict) current, sending it only when it changes.
//
// See sd_notify(3) and systemd.service(5). This package imports the standard
// library only (and internal/host, which does too).
package sdnotify
