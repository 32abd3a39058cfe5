// Package health judges this node's clock from the facts the probes read:
// OK, WARNING or CRITICAL, with a reason for every finding that is not OK.
// It is a pure function, shared by `clockwatch status` (its exit code is the
// level, so it doubles as a monitoring check) and the daemon's systemd
// STATUS line. It judges the kernel from its adjtimex facts and every time
// source from its normalised reading (package timesource), naming the
// source: it imports no source package.
package health
