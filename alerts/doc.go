// Package alerts holds clockwatch's Prometheus rules (clockwatch.rules.yml,
// generated from the mixin in mixin/),
// their promtool unit tests (clockwatch.rules_test.yml) and an example
// Alertmanager configuration (alertmanager.example.yml). It has no Go code:
// its tests check those files with promtool and amtool, check every metric
// they use against docs/metrics.md, and run the rules in a real Prometheus
// and Alertmanager against a real clockwatch, end to end.
package alerts
