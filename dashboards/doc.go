// Package dashboards holds clockwatch's Grafana dashboard (clockwatch.json,
// generated from the mixin in mixin/), importable as is: a ${datasource}
// variable for the Prometheus data source, and job and instance variables. It has no Go code: its tests decode the
// dashboard, check its panel ids and layout, check every metric its queries
// use against docs/metrics.md, and run every query against a real Prometheus
// that has scraped a real clockwatch.
package dashboards
