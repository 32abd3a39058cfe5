// The files generated from the mixin, keyed by their path in the repository.
// The generator (go run ./mixin/cmd/mixin) passes config, an object merged
// into _config, as a top-level argument: {} for the shipped files, another
// selector or thresholds for tests and for users who want files of their own.
function(config={})
  local mixin = (import 'mixin.libsonnet') + { _config+:: config };
  local group(groups, name) = std.filter(function(g) g.name == name, groups)[0];
  {
    // One rule group, recording rules first: the alerts then read records
    // of the same evaluation.
    'alerts/clockwatch.rules.yml': {
      groups: [{
        name: 'clockwatch',
        rules: group(mixin.prometheusRules.groups, 'clockwatch.rules').rules
               + group(mixin.prometheusAlerts.groups, 'clockwatch').rules,
      }],
    },
    // Opt-in: series under chrony_exporter's and node_exporter's names.
    'alerts/clockwatch.migration.rules.yml': mixin.clockwatchMigrationRules,
    'dashboards/clockwatch.json': mixin.grafanaDashboards['clockwatch.json'],
    // Kubernetes (docs/kubernetes.md): the same rules as prometheus-operator's
    // PrometheusRule, the dashboard as a ConfigMap for Grafana's sidecar
    // (it loads every ConfigMap labelled grafana_dashboard), and the
    // chart's copies (helm reads files inside the chart only).
    'deploy/kubernetes/prometheus-operator/prometheusrule.yaml': {
      apiVersion: 'monitoring.coreos.com/v1',
      kind: 'PrometheusRule',
      metadata: { name: 'clockwatch', namespace: 'clockwatch', labels: { 'app.kubernetes.io/name': 'clockwatch' } },
      spec: $['alerts/clockwatch.rules.yml'],
    },
    'deploy/kubernetes/base/dashboard.yaml': {
      apiVersion: 'v1',
      kind: 'ConfigMap',
      metadata: { name: 'clockwatch-dashboard', namespace: 'clockwatch', labels: { grafana_dashboard: '1' } },
      data: { 'clockwatch.json': std.manifestJsonEx(mixin.grafanaDashboards['clockwatch.json'], '  ') + '\n' },
    },
    'deploy/helm/clockwatch/files/clockwatch.rules.yml': $['alerts/clockwatch.rules.yml'],
    'deploy/helm/clockwatch/files/clockwatch.json': mixin.grafanaDashboards['clockwatch.json'],
  }
