// Package daemontest builds the clockwatch binary and runs it for
// integration tests outside cmd/clockwatch (the alert rules, the dashboard):
// on a free loopback port with its own state and runtime directories (never
// the machine's /var/lib/clockwatch or /run/clockwatch), waited for by its
// "Listening on" log line, and stopped by PID when the test ends.
package daemontest
