// Package exporter turns what clockwatch reads into Prometheus metrics. The
// host's clocks and the kernel's timex are read at scrape time (Updaters
// under the Scraper) because a read costs microseconds; outside daemons are
// polled in the background by their probes, and their collectors only read
// the last result, so a scrape never waits on the network.
//
// Metric names are constants here, shared with the tests and docs/metrics.md.
package exporter
