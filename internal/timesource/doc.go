// Package timesource is the contract between the time sources clockwatch
// reads (chronyd, ntpd, systemd-timesyncd, linuxptp, the kernel, SNTP probes)
// and the code that judges the clock from them (package health and
// internal/policy). Every source produces one Reading per poll; the judges
// take the readings keyed by source and never import a source package.
// Each source keeps its rich snapshot for its own metrics.
package timesource
