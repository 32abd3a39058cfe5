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

  // number renders a threshold for PromQL and descriptions as Go's %g
  // does (strconv.FormatFloat(x, 'g', -1, 64)), exactly for numbers of up
  // to 12 significant digits: 0.5, 0.000125, 1.25e-05, 1e+06. jsonnet's
  // own %g keeps six digits after the leading zeros ('%g' % 125e-6 is
  // 0.00013). The chart (deploy/helm/clockwatch) fills the thresholds in
  // with printf "%g"; mixin/generate's test holds the two to the same text.
  number(x)::
    local strip(s) = std.rstripChars(std.rstripChars(s, '0'), '.');
    local a = std.abs(x);
    local sign = if x < 0 then '-' else '';
    local pow10(e) = std.parseJson('1e%d' % e);
    // The decimal exponent, the largest e with 1e<e> <= a: log's estimate,
    // corrected by comparing with the exact powers of ten.
    local e0 = if x == 0 then 0 else std.floor(std.log(a) / std.log(10));
    local exp = if pow10(e0 + 1) <= a then e0 + 1 else if pow10(e0) > a then e0 - 1 else e0;
    local sci(e) =
      local m = strip('%.11f' % (a / pow10(e)));
      // Rounding up to 10 moves the exponent.
      if m == '10' then [1, e + 1] else [m, e];
    if x == 0 then '0'
    else if exp >= -4 && exp < 6 then sign + strip(('%.' + (11 - exp) + 'f') % a)
    else
      local s = sci(exp);
      sign + s[0] + 'e' + (if s[1] < 0 then '-' else '+') + '%02d' % std.abs(s[1]),

  // duration renders seconds as a Go duration the way humanizeDuration
  // does for the values in the same sentence: 100us, 500ms, 2s, 1.5ms
  // (number's digits, in the unit; the chart's helper the same).
  duration(seconds)::
    if seconds < 1e-3 then '%sus' % $.number(seconds * 1e6)
    else if seconds < 1 then '%sms' % $.number(seconds * 1000) else '%ss' % $.number(seconds),
}
