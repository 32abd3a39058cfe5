// Recording rules. The alerts read them in the same evaluation only if they
// share a rule group (across groups they could lag one interval, or read
// nothing yet): the generated alerts/clockwatch.rules.yml puts the group
// "clockwatch.rules" and the alerts' group "clockwatch" together in one
// group, in that order.
local utils = import '../lib/utils.libsonnet';

{
  prometheusRules+:: {
    local c = $._config { by: utils.by($._config), jobBy: utils.jobBy($._config) },
    groups+: [
      {
        name: 'clockwatch.rules',
        rules: [
          // This node's wall clock minus the Prometheus server's, from one
          // scrape: clockwatch samples CLOCK_REALTIME while it is being
          // scraped, and timestamp() is when Prometheus started that scrape.
          // Off by at most the scrape latency; independent of the node's
          // time daemon.
          {
            record: 'instance:clockwatch_clock_skew_seconds:scrape',
            expr: 'clockwatch_clock_realtime_seconds{%(clockwatchSelector)s} - timestamp(clockwatch_clock_realtime_seconds{%(clockwatchSelector)s})' % c,
          },
          // The spread of those skews across the fleet (per job): how far
          // apart the nodes' clocks are from each other.
          {
            record: 'job:clockwatch_clock_skew_seconds:spread',
            expr: |||
              max by (%(jobBy)s) (instance:clockwatch_clock_skew_seconds:scrape{%(clockwatchSelector)s})
              - min by (%(jobBy)s) (instance:clockwatch_clock_skew_seconds:scrape{%(clockwatchSelector)s})
            ||| % c,
          },
          // Clock steps in the last 10 minutes, by direction. The counter
          // alone misses a step clockwatch reports as it starts (made while
          // it was not running): the counter is already 1 at the first
          // scrape, so increase() sees nothing. The last step's size and
          // wall-clock time catch that case (give or take this node's clock
          // error, which a step has just fixed), counted as one step (sgn).
          {
            record: 'instance:clockwatch_clock_steps:increase10m',
            expr: |||
              increase(clockwatch_clock_steps_total{%(clockwatchSelector)s}[10m]) > 0
              or label_replace(
                -sgn(clockwatch_clock_last_step_seconds{%(clockwatchSelector)s} < 0)
                and on (%(by)s) time() - clockwatch_clock_last_step_timestamp_seconds{%(clockwatchSelector)s} < 600,
                "direction", "backward", "", "")
              or label_replace(
                sgn(clockwatch_clock_last_step_seconds{%(clockwatchSelector)s} > 0)
                and on (%(by)s) time() - clockwatch_clock_last_step_timestamp_seconds{%(clockwatchSelector)s} < 600,
                "direction", "forward", "", "")
            ||| % c,
          },
          // Stepdown events announced in the last 10 minutes, by type,
          // reason and drill. A label combination's series appears with the
          // first such event, at 1, where increase() sees nothing; a series
          // that was absent 10 minutes ago, on a target scraped then, counts
          // as new events.
          {
            record: 'instance:clockwatch_stepdown_events:increase10m',
            expr: |||
              increase(clockwatch_stepdown_events_total{%(clockwatchSelector)s}[10m]) > 0
              or (clockwatch_stepdown_events_total{%(clockwatchSelector)s} unless clockwatch_stepdown_events_total{%(clockwatchSelector)s} offset 10m)
              and on (%(by)s) (up{%(clockwatchSelector)s} offset 10m)
            ||| % c,
          },
          // Stepdown messages sent minus acks received in the last 10
          // minutes: events subscribers were told about and did not
          // acknowledge.
          {
            record: 'instance:clockwatch_stepdown_unacked:increase10m',
            expr: |||
              sum by (%(by)s) (increase(clockwatch_stepdown_messages_sent_total{%(clockwatchSelector)s,type="stepdown"}[10m]))
              - sum by (%(by)s) (increase(clockwatch_stepdown_acks_total{%(clockwatchSelector)s}[10m]))
            ||| % c,
          },
        ],
      },
    ],
  },
}
