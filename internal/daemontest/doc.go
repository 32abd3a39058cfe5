// Package daemontest builds the clockwatch binary and runs it for
// integration tests outside cmd/clockwatch (the alert rules, the dashboard):
// on a free loopback port, waited for by its "Listening on" log line, and
// stopped by PID when the test ends.
package daemontest
