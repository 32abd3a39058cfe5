// Package chrony reads chronyd's state over its command protocol (what
// `chronyc tracking`, `sources` and `sourcestats` show) without ever running
// chronyc, and audits chrony.conf for settings that let chronyd step the
// clock at runtime.
//
// The protocol encoding is github.com/facebook/time/ntp/chrony; this package
// adds what a daemon needs around it: finding chronyd (its unix socket, or
// UDP port 323 on loopback, where chronyd answers only some commands), a
// reply socket chronyd can write to and that is removed on exit, a deadline
// on every request, a check of every reply's sequence number and command,
// re-dialling after any error, and errors that say in one line how to fix
// the problem.
//
// Poller is the long-running task: it polls on its own interval and keeps
// the last result with its age and error, so that Prometheus scrapes and
// the stepdown triggers read a snapshot and never wait on chronyd. Nothing
// here imports Prometheus; package exporter turns snapshots into metrics.
package chrony
