// Package systemd holds clockwatch's systemd units (clockwatch.service and
// the optional clockwatch.socket) and the tests that treat them as code:
// systemd-analyze verify must print nothing, the security exposure must stay
// at or below 2.0, the settings the daemon depends on must be present, and
// a process wired the way the daemon is must speak the notify protocol.
//
// The package has no Go code of its own; the protocol lives in
// internal/sdnotify.
package systemd
