// Package exporter turns what clockwatch's probes read into Prometheus
// metrics. Local probes (the clocks, the kernel's timex) are read at scrape
// time because a read costs microseconds; probes of outside daemons are
// polled in the background and their collectors only read the last result,
// so a scrape never waits on the network.
//
// Metric names are constants here, shared with the tests and docs/metrics.md.
package exporter
