// Package generate evaluates the clockwatch mixin (mixin/*.libsonnet, read
// with go-jsonnet) into the files clockwatch ships: the Prometheus rule file
// under alerts/ and the Grafana dashboard under dashboards/. Those files are
// outputs of the mixin, never edited by hand; the package's test regenerates
// them and fails on any difference.
package generate
