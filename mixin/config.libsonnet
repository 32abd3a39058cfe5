// What an importer may change: the selectors, labels, thresholds and links
// every alert, recording rule and dashboard query of the mixin is built from.
// Override with `(import 'clockwatch-mixin/mixin.libsonnet') + { _config+:: {...} }`.
{
  _config+:: {
    // Selects clockwatch's series: every alert and recording rule selects
    // with it, and the dashboard's $job variable lists the jobs it matches.
    clockwatchSelector: 'job="clockwatch"',

    // Multi-cluster setups (one Prometheus or Thanos over several clusters)
    // set showMultiCluster: the dashboard gets a $cluster variable on
    // clusterLabel, and the alerts' and recording rules' aggregations keep it.
    showMultiCluster: false,
    clusterLabel: 'cluster',

    // Labels that identify one clockwatch: the recording rules aggregate
    // and join by them.
    instanceLabels: ['job', 'instance'],

    // Thresholds in base units (seconds, ratios), as the metrics are.
    offsetCriticalSeconds: 0.5,  // the clock is wrong now: page
    offsetWarningSeconds: 0.1,
    skewCriticalSeconds: 0.5,  // node clock minus Prometheus's clock
    fleetSkewWarningSeconds: 0.1,  // spread of skews in one job
    stepForwardCriticalSeconds: 0.5,  // smaller forward steps are leap-like noise
    errorBoundWarningSeconds: 0.25,
    frequencyCorrectionWarningPPM: 100,
    // ptp4l holds microseconds: its own limits, as ptp.health and
    // ptp.triggers judge it (an offset over the 100 µs trigger, an error
    // bound over the 1 ms one).
    ptpOffsetWarningSeconds: 100e-6,
    ptpErrorBoundWarningSeconds: 1e-3,

    // The severity of the pages; warnings and info keep theirs.
    criticalSeverity: 'critical',

    // printf pattern of each alert's runbook link, given the alert's name in
    // lower case (its section anchor in docs/runbook.md). The default is the
    // runbook the packages install on every node; point it at a copy your
    // on-call can open (a wiki, a web server, the repository).
    runbookURLPattern: 'file:///usr/share/doc/clockwatch/docs/runbook.md#%s',

    // The dashboard.
    dashboardUID: 'clockwatch',
    dashboardTitle: 'clockwatch: node clocks',
    dashboardTimezone: 'utc',
    dashboardRefresh: '30s',
  },
}
