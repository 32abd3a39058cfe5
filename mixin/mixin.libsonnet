// The clockwatch monitoring mixin: alerts, recording rules and a Grafana
// dashboard, parameterised by config.libsonnet's _config. alerts/ and
// dashboards/ at the top of the repository are generated from it
// (go run ./mixin/cmd/mixin; a test checks they are up to date).
(import 'config.libsonnet') +
(import 'alerts/alerts.libsonnet') +
(import 'rules/rules.libsonnet') +
(import 'rules/migration.libsonnet') +
(import 'dashboards/dashboards.libsonnet')
