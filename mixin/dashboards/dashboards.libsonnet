// Grafana dashboards, keyed by file name.
{
  grafanaDashboards+:: {
    'clockwatch.json': (import 'clockwatch.libsonnet')($._config),
  },
}
