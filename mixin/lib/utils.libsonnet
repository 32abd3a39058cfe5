// Helpers the alerts, rules and dashboard share.
{
  // oneLine joins a wrapped ||| text block into one line, so annotations
  // read as one paragraph wherever Alertmanager shows them.
  oneLine(s):: std.join(' ', std.filter(function(l) l != '', std.split(s, '\n'))),

  // by lists the labels that identify one clockwatch (and its cluster in a
  // multi-cluster setup), for `by (...)` and `on (...)`.
  by(config):: std.join(', ', (if config.showMultiCluster then [config.clusterLabel] else []) + config.instanceLabels),

  // jobBy is the same for a whole job.
  jobBy(config):: std.join(', ', (if config.showMultiCluster then [config.clusterLabel] else []) + ['job']),

  // duration renders seconds as a Go duration the way humanizeDuration
  // does for the values in the same sentence: 100us, 500ms, 2s.
  duration(seconds)::
    if seconds < 1e-3 then '%dus' % std.floor(seconds * 1e6 + 0.5)
    else if seconds < 1 then '%dms' % std.floor(seconds * 1000 + 0.5) else '%gs' % seconds,
}
