// Recording rules that give clockwatch's figures the names, labels, units
// and signs of chrony_exporter's and node_exporter's timex collector, so
// that queries and dashboards written for those exporters keep working
// while a fleet moves to clockwatch (docs/metrics.md, "Coming from
// node_exporter / chrony_exporter"). Opt-in: _config.migrationRules adds
// them to prometheusRules; the repository ships them as
// alerts/clockwatch.migration.rules.yml. The recorded series keep
// clockwatch's job and instance labels, so they do not collide with a
// chrony_exporter or node_exporter still scraped under its own job.
{
  _config+:: {
    migrationRules: false,
  },

  clockwatchMigrationRules:: {
    local c = $._config,
    local sel = c.clockwatchSelector,
    local same(to, from) = { record: to, expr: '%s{%s}' % [from, sel] },
    local scaled(to, from, factor) = { record: to, expr: '%s{%s} * %s' % [from, sel, factor] },
    // relabel copies clockwatch's label names to the other exporter's and
    // drops clockwatch's, one pair at a time.
    local relabel(expr, pairs) =
      if std.length(pairs) == 0 then expr
      else relabel('label_replace(%s, "%s", "$1", "%s", "(.*)")' % [expr, pairs[0][1], pairs[0][0]], pairs[1:]),
    local renamed(to, from, pairs, extra='') = {
      record: to,
      expr: 'max without (%s) (%s)' % [
        std.join(', ', [p[0] for p in pairs]),
        relabel('%s{%s}' % [from, sel] + extra, pairs),
      ],
    },

    groups: [
      {
        name: 'clockwatch-chrony-exporter.rules',
        rules: [
          same('chrony_tracking_stratum', 'clockwatch_chrony_tracking_stratum'),
          same('chrony_tracking_last_offset_seconds', 'clockwatch_chrony_tracking_last_offset_seconds'),
          same('chrony_tracking_rms_offset_seconds', 'clockwatch_chrony_tracking_rms_offset_seconds'),
          same('chrony_tracking_root_delay_seconds', 'clockwatch_chrony_tracking_root_delay_seconds'),
          same('chrony_tracking_root_dispersion_seconds', 'clockwatch_chrony_tracking_root_dispersion_seconds'),
          same('chrony_tracking_update_interval_seconds', 'clockwatch_chrony_tracking_update_interval_seconds'),
          same('chrony_tracking_reference_timestamp_seconds', 'clockwatch_chrony_tracking_reference_timestamp_seconds'),
          // chrony_exporter exports chronyd's correction (positive: the
          // clock is slow); clockwatch the offset (positive: ahead).
          scaled('chrony_tracking_system_time_seconds', 'clockwatch_chrony_tracking_system_time_offset_seconds', '-1'),
          scaled('chrony_tracking_frequency_ppms', 'clockwatch_chrony_tracking_frequency_ratio', '1e6'),
          scaled('chrony_tracking_residual_frequency_ppms', 'clockwatch_chrony_tracking_residual_frequency_ratio', '1e6'),
          scaled('chrony_tracking_skew_ppms', 'clockwatch_chrony_tracking_skew_ratio', '1e6'),
          renamed('chrony_tracking_info',
                  'clockwatch_chrony_tracking_info',
                  [['ref_address', 'tracking_address'], ['ref_name', 'tracking_name'], ['ref_id', 'tracking_refid']]),
          // The source series already carry chrony_exporter's labels.
          same('chrony_sources_stratum', 'clockwatch_chrony_source_stratum'),
          same('chrony_sources_polling_interval_seconds', 'clockwatch_chrony_source_poll_interval_seconds'),
          same('chrony_sources_last_sample_age_seconds', 'clockwatch_chrony_source_last_sample_age_seconds'),
          same('chrony_sources_last_sample_offset_seconds', 'clockwatch_chrony_source_last_sample_offset_seconds'),
          same('chrony_sources_last_sample_error_margin_seconds', 'clockwatch_chrony_source_last_sample_error_seconds'),
          // chrony_exporter calls a reference clock's mode "ref".
          {
            record: 'chrony_sources_state_info',
            expr: 'label_replace(clockwatch_chrony_source_info{%s}, "source_mode", "ref", "source_mode", "refclock")' % sel,
          },
        ],
      },
      {
        name: 'clockwatch-node-exporter-timex.rules',
        rules: [
          same('node_timex_offset_seconds', 'clockwatch_kernel_offset_seconds'),
          // node_exporter's ratio is the clock's rate, near 1;
          // clockwatch's the frequency offset, near 0.
          { record: 'node_timex_frequency_adjustment_ratio', expr: '1 + clockwatch_kernel_frequency_offset_ratio{%s}' % sel },
          same('node_timex_maxerror_seconds', 'clockwatch_kernel_maxerror_seconds'),
          same('node_timex_estimated_error_seconds', 'clockwatch_kernel_esterror_seconds'),
          same('node_timex_sync_status', 'clockwatch_kernel_synchronized'),
          same('node_timex_status', 'clockwatch_kernel_status_flags'),
          same('node_timex_tai_offset_seconds', 'clockwatch_kernel_tai_offset_seconds'),
          same('node_timex_loop_time_constant', 'clockwatch_kernel_time_constant'),
          same('node_timex_tick_seconds', 'clockwatch_kernel_tick_seconds'),
        ],
      },
    ],
  },

  prometheusRules+:: {
    groups+: if $._config.migrationRules then $.clockwatchMigrationRules.groups else [],
  },
}
