// Package generate evaluates the clockwatch mixin (mixin/*.libsonnet, read
// with go-jsonnet) into the files clockwatch ships: the Prometheus rule file
// under alerts/, the Grafana dashboard under dashboards/, their Kubernetes
// objects, and the Helm chart's copies with placeholders for its mixin
// values and values.yaml's block of them (chart.go). Those files are
// outputs of the mixin, never edited by hand; the package's test regenerates
// them and fails on any difference.
package generate
