// Package metricsdoc reads the metric tables of docs/metrics.md and finds the
// metrics a PromQL expression uses, so that tests can prove every metric an
// alert rule or a dashboard panel queries is one clockwatch documents (and
// docs/metrics.md is itself checked against the real /metrics output).
package metricsdoc
