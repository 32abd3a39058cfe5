// The clockwatch dashboard: clock health of the nodes running clockwatch.
// Every query selects by $job and $instance (and $cluster when
// _config.showMultiCluster is set); $job lists the jobs that match
// _config.clockwatchSelector.
function(config)
  local ds = { type: 'prometheus', uid: '${datasource}' };
  local cluster = if config.showMultiCluster then '%s=~"$cluster", ' % config.clusterLabel else '';
  // q fills a query's selector: every %(sel)s becomes the dashboard's.
  local q(expr) = expr % { sel: cluster + 'job=~"$job", instance=~"$instance"' };
  local variable(name, label, query) = {
    type: 'query',
    name: name,
    label: label,
    datasource: ds,
    query: query,
    definition: query,
    includeAll: true,
    multi: true,
    allValue: '.+',
    current: {},
    refresh: 2,
    sort: 1,
    hide: 0,
    regex: '',
    options: [],
  };
  {
    id: null,
    uid: config.dashboardUID,
    title: config.dashboardTitle,
    description: 'Clock health of the nodes running clockwatch: offset, steps, time daemon, stepdown and the agent. Alerts: alerts/clockwatch.rules.yml; runbook: docs/runbook.md.',
    tags: ['clockwatch', 'time', 'ntp'],
    editable: true,
    graphTooltip: 1,
    schemaVersion: 39,
    version: 1,
    time: { from: 'now-6h', to: 'now' },
    refresh: config.dashboardRefresh,
    timezone: config.dashboardTimezone,
    links: [],
    annotations:
      {
        list: [
          {
            builtIn: 1,
            datasource: {
              type: 'grafana',
              uid: '-- Grafana --',
            },
            enable: true,
            hide: true,
            iconColor: 'rgba(0, 211, 255, 1)',
            name: 'Annotations & Alerts',
            type: 'dashboard',
          },
          {
            datasource: ds,
            enable: true,
            iconColor: 'red',
            name: 'Clock steps',
            expr: q('increase(clockwatch_clock_steps_total{%(sel)s}[1m]) > 0'),
            step: '15s',
            titleFormat: 'Clock step {{direction}}',
            textFormat: '{{instance}}: wall clock stepped {{direction}}',
            tagKeys: 'instance,direction',
            useValueForTime: false,
          },
          {
            datasource: ds,
            enable: true,
            iconColor: 'orange',
            name: 'Stepdown events',
            expr: q('increase(clockwatch_stepdown_events_total{%(sel)s,type="stepdown"}[1m]) > 0'),
            step: '15s',
            titleFormat: 'Stepdown ({{reason}})',
            textFormat: '{{instance}}: stepdown, reason {{reason}}, drill {{drill}}',
            tagKeys: 'instance,reason,drill',
            useValueForTime: false,
          },
        ],
      },
    templating: {
      list: [
        {
          type: 'datasource',
          name: 'datasource',
          label: 'Data source',
          query: 'prometheus',
          current: {},
          hide: 0,
          refresh: 1,
          regex: '',
          options: [],
        },
      ] + (
        if config.showMultiCluster then [
          variable('cluster', 'Cluster', 'label_values(clockwatch_build_info{%s}, %s)' % [config.clockwatchSelector, config.clusterLabel]),
        ] else []
      ) + [
        variable('job', 'Job', 'label_values(clockwatch_build_info{%s%s}, job)' % [cluster, config.clockwatchSelector]),
        variable('instance', 'Instance', 'label_values(clockwatch_build_info{%sjob=~"$job"}, instance)' % cluster),
      ],
    },
    panels:
      [
        {
          type: 'row',
          id: 1,
          title: 'Clock',
          collapsed: false,
          panels: [],
          gridPos: {
            x: 0,
            y: 0,
            w: 24,
            h: 1,
          },
        },
        {
          type: 'timeseries',
          id: 2,
          title: 'Offset from true time',
          description: "The time daemon's estimate (chronyd or ntpd) of this clock minus true time (positive: ahead); the clock minus the Prometheus server's clock at each scrape and the median of clockwatch's own NTP probes (both independent of the time daemon); the offset the kernel PLL is still correcting. The lines at ±500 ms are where clockwatch pages.",
          datasource: ds,
          gridPos: {
            x: 0,
            y: 1,
            w: 16,
            h: 9,
          },
          targets: [
            {
              datasource: ds,
              refId: 'A',
              expr: q('clockwatch_chrony_tracking_system_time_offset_seconds{%(sel)s}'),
              legendFormat: '{{instance}} chrony',
              range: true,
              instant: false,
            },
            {
              datasource: ds,
              refId: 'B',
              expr: q('clockwatch_clock_realtime_seconds{%(sel)s} - timestamp(clockwatch_clock_realtime_seconds{%(sel)s})'),
              legendFormat: '{{instance}} vs Prometheus',
              range: true,
              instant: false,
            },
            {
              datasource: ds,
              refId: 'C',
              expr: q('clockwatch_kernel_offset_seconds{%(sel)s}'),
              legendFormat: '{{instance}} kernel PLL',
              range: true,
              instant: false,
            },
            {
              datasource: ds,
              refId: 'D',
              expr: q('quantile by (instance) (0.5, clockwatch_ntp_probe_offset_seconds{%(sel)s})'),
              legendFormat: '{{instance}} NTP probes (median)',
              range: true,
              instant: false,
            },
            {
              datasource: ds,
              refId: 'E',
              expr: q('clockwatch_ntpd_offset_seconds{%(sel)s}'),
              legendFormat: '{{instance}} ntpd',
              range: true,
              instant: false,
            },
          ],
          fieldConfig: {
            defaults: {
              unit: 's',
              custom: {
                drawStyle: 'line',
                lineWidth: 1,
                fillOpacity: 0,
                showPoints: 'never',
                spanNulls: false,
                thresholdsStyle: {
                  mode: 'dashed',
                },
              },
              color: {
                mode: 'palette-classic',
              },
              min: null,
              thresholds: {
                mode: 'absolute',
                steps: [
                  {
                    color: 'red',
                    value: null,
                  },
                  {
                    color: 'green',
                    value: -0.5,
                  },
                  {
                    color: 'red',
                    value: 0.5,
                  },
                ],
              },
            },
            overrides: [],
          },
          options: {
            legend: {
              displayMode: 'list',
              placement: 'bottom',
              showLegend: true,
            },
            tooltip: {
              mode: 'multi',
              sort: 'none',
            },
          },
        },
        {
          type: 'stat',
          id: 3,
          title: 'Clock steps',
          description: 'Wall-clock steps seen in the selected time range, both directions.',
          datasource: ds,
          gridPos: {
            x: 16,
            y: 1,
            w: 4,
            h: 4,
          },
          targets: [
            {
              datasource: ds,
              refId: 'A',
              expr: q('sum(increase(clockwatch_clock_steps_total{%(sel)s}[$__range]))'),
              legendFormat: 'steps',
              range: false,
              instant: true,
            },
          ],
          fieldConfig: {
            defaults: {
              unit: 'short',
              thresholds: {
                mode: 'absolute',
                steps: [
                  {
                    color: 'green',
                    value: null,
                  },
                  {
                    color: 'red',
                    value: 0.5,
                  },
                ],
              },
              mappings: [],
              color: {
                mode: 'thresholds',
              },
            },
            overrides: [],
          },
          options: {
            reduceOptions: {
              calcs: ['lastNotNull'],
              fields: '',
              values: false,
            },
            colorMode: 'background',
            graphMode: 'none',
            textMode: 'auto',
            justifyMode: 'auto',
            orientation: 'auto',
          },
        },
        {
          type: 'stat',
          id: 4,
          title: 'Last step',
          description: 'Signed size of the last step (negative: backward); 0 before any.',
          datasource: ds,
          gridPos: {
            x: 20,
            y: 1,
            w: 4,
            h: 4,
          },
          targets: [
            {
              datasource: ds,
              refId: 'A',
              expr: q('clockwatch_clock_last_step_seconds{%(sel)s}'),
              legendFormat: '{{instance}}',
              range: false,
              instant: true,
            },
          ],
          fieldConfig: {
            defaults: {
              unit: 's',
              thresholds: {
                mode: 'absolute',
                steps: [
                  {
                    color: 'red',
                    value: null,
                  },
                  {
                    color: 'green',
                    value: -1e-06,
                  },
                  {
                    color: 'red',
                    value: 1e-06,
                  },
                ],
              },
              mappings: [],
              color: {
                mode: 'thresholds',
              },
            },
            overrides: [],
          },
          options: {
            reduceOptions: {
              calcs: ['lastNotNull'],
              fields: '',
              values: false,
            },
            colorMode: 'background',
            graphMode: 'none',
            textMode: 'auto',
            justifyMode: 'auto',
            orientation: 'auto',
          },
        },
        {
          type: 'stat',
          id: 5,
          title: 'Synchronised',
          description: 'Kernel STA_UNSYNC clear and clock state not TIME_ERROR.',
          datasource: ds,
          gridPos: {
            x: 16,
            y: 5,
            w: 4,
            h: 5,
          },
          targets: [
            {
              datasource: ds,
              refId: 'A',
              expr: q('min(clockwatch_kernel_synchronized{%(sel)s})'),
              legendFormat: 'kernel',
              range: false,
              instant: true,
            },
          ],
          fieldConfig: {
            defaults: {
              unit: 'none',
              thresholds: {
                mode: 'absolute',
                steps: [
                  {
                    color: 'red',
                    value: null,
                  },
                  {
                    color: 'green',
                    value: 1,
                  },
                ],
              },
              mappings: [
                {
                  type: 'value',
                  options: {
                    '0': {
                      text: 'no',
                      color: 'red',
                    },
                    '1': {
                      text: 'yes',
                      color: 'green',
                    },
                  },
                },
              ],
              color: {
                mode: 'thresholds',
              },
            },
            overrides: [],
          },
          options: {
            reduceOptions: {
              calcs: ['lastNotNull'],
              fields: '',
              values: false,
            },
            colorMode: 'background',
            graphMode: 'none',
            textMode: 'auto',
            justifyMode: 'auto',
            orientation: 'auto',
          },
        },
        {
          type: 'stat',
          id: 6,
          title: 'Error bound',
          description: "Largest clock error chronyd's figures allow (|offset| + root dispersion + root delay/2).",
          datasource: ds,
          gridPos: {
            x: 20,
            y: 5,
            w: 4,
            h: 5,
          },
          targets: [
            {
              datasource: ds,
              refId: 'A',
              expr: q('max(clockwatch_chrony_clock_error_bound_seconds{%(sel)s})'),
              legendFormat: 'error bound',
              range: false,
              instant: true,
            },
          ],
          fieldConfig: {
            defaults: {
              unit: 's',
              thresholds: {
                mode: 'absolute',
                steps: [
                  {
                    color: 'green',
                    value: null,
                  },
                  {
                    color: 'yellow',
                    value: 0.25,
                  },
                  {
                    color: 'red',
                    value: 1,
                  },
                ],
              },
              mappings: [],
              color: {
                mode: 'thresholds',
              },
            },
            overrides: [],
          },
          options: {
            reduceOptions: {
              calcs: ['lastNotNull'],
              fields: '',
              values: false,
            },
            colorMode: 'background',
            graphMode: 'none',
            textMode: 'auto',
            justifyMode: 'auto',
            orientation: 'auto',
          },
        },
        {
          type: 'timeseries',
          id: 7,
          title: 'Wall/boot gap change (10m)',
          description: 'Change over 10 minutes of CLOCK_REALTIME − CLOCK_BOOTTIME. Flat when the clock is left alone or only suspended; a step shows as a jump, a slew as a slope.',
          datasource: ds,
          gridPos: {
            x: 0,
            y: 10,
            w: 8,
            h: 8,
          },
          targets: [
            {
              datasource: ds,
              refId: 'A',
              expr: q('delta(clockwatch_clock_wall_boot_gap_seconds{%(sel)s}[10m])'),
              legendFormat: '{{instance}}',
              range: true,
              instant: false,
            },
          ],
          fieldConfig: {
            defaults: {
              unit: 's',
              custom: {
                drawStyle: 'line',
                lineWidth: 1,
                fillOpacity: 0,
                showPoints: 'never',
                spanNulls: false,
              },
              color: {
                mode: 'palette-classic',
              },
            },
            overrides: [],
          },
          options: {
            legend: {
              displayMode: 'list',
              placement: 'bottom',
              showLegend: true,
            },
            tooltip: {
              mode: 'multi',
              sort: 'none',
            },
          },
        },
        {
          type: 'timeseries',
          id: 8,
          title: 'Frequency correction',
          description: "Frequency correction in ppm: measured MONOTONIC vs MONOTONIC_RAW rate, the kernel's adjtimex frequency, and chronyd's estimate of the clock's own drift.",
          datasource: ds,
          gridPos: {
            x: 8,
            y: 10,
            w: 8,
            h: 8,
          },
          targets: [
            {
              datasource: ds,
              refId: 'A',
              expr: q('clockwatch_clock_frequency_correction_ratio{%(sel)s} * 1e6'),
              legendFormat: '{{instance}} measured',
              range: true,
              instant: false,
            },
            {
              datasource: ds,
              refId: 'B',
              expr: q('clockwatch_kernel_frequency_offset_ratio{%(sel)s} * 1e6'),
              legendFormat: '{{instance}} kernel',
              range: true,
              instant: false,
            },
            {
              datasource: ds,
              refId: 'C',
              expr: q('clockwatch_chrony_tracking_frequency_ratio{%(sel)s} * 1e6'),
              legendFormat: '{{instance}} chrony drift',
              range: true,
              instant: false,
            },
            {
              datasource: ds,
              refId: 'D',
              expr: q('clockwatch_ntpd_frequency_ratio{%(sel)s} * 1e6'),
              legendFormat: '{{instance}} ntpd drift',
              range: true,
              instant: false,
            },
          ],
          fieldConfig: {
            defaults: {
              unit: 'ppm',
              custom: {
                drawStyle: 'line',
                lineWidth: 1,
                fillOpacity: 0,
                showPoints: 'never',
                spanNulls: false,
              },
              color: {
                mode: 'palette-classic',
              },
            },
            overrides: [],
          },
          options: {
            legend: {
              displayMode: 'list',
              placement: 'bottom',
              showLegend: true,
            },
            tooltip: {
              mode: 'multi',
              sort: 'none',
            },
          },
        },
        {
          type: 'timeseries',
          id: 9,
          title: 'Error bound',
          description: "chronyd's error bound, and the kernel's maximum and estimated error (maxerror saturates at 16 s when nothing disciplines the clock).",
          datasource: ds,
          gridPos: {
            x: 16,
            y: 10,
            w: 8,
            h: 8,
          },
          targets: [
            {
              datasource: ds,
              refId: 'A',
              expr: q('clockwatch_chrony_clock_error_bound_seconds{%(sel)s}'),
              legendFormat: '{{instance}} chrony bound',
              range: true,
              instant: false,
            },
            {
              datasource: ds,
              refId: 'B',
              expr: q('clockwatch_kernel_maxerror_seconds{%(sel)s}'),
              legendFormat: '{{instance}} kernel maxerror',
              range: true,
              instant: false,
            },
            {
              datasource: ds,
              refId: 'C',
              expr: q('clockwatch_kernel_esterror_seconds{%(sel)s}'),
              legendFormat: '{{instance}} kernel esterror',
              range: true,
              instant: false,
            },
            {
              datasource: ds,
              refId: 'D',
              expr: q('clockwatch_ntpd_clock_error_bound_seconds{%(sel)s}'),
              legendFormat: '{{instance}} ntpd bound',
              range: true,
              instant: false,
            },
          ],
          fieldConfig: {
            defaults: {
              unit: 's',
              custom: {
                drawStyle: 'line',
                lineWidth: 1,
                fillOpacity: 0,
                showPoints: 'never',
                spanNulls: false,
                scaleDistribution: {
                  type: 'log',
                  log: 10,
                },
              },
              color: {
                mode: 'palette-classic',
              },
            },
            overrides: [],
          },
          options: {
            legend: {
              displayMode: 'list',
              placement: 'bottom',
              showLegend: true,
            },
            tooltip: {
              mode: 'multi',
              sort: 'none',
            },
          },
        },
        {
          type: 'row',
          id: 10,
          title: 'chrony',
          collapsed: false,
          panels: [],
          gridPos: {
            x: 0,
            y: 18,
            w: 24,
            h: 1,
          },
        },
        {
          type: 'table',
          id: 11,
          title: 'chrony sources',
          description: "chronyd's sources now: state (sync, candidate, falseticker, jittery, outlier, unreach), stratum, reachability of the last 8 polls and the last sample's offset.",
          datasource: ds,
          gridPos: {
            x: 0,
            y: 19,
            w: 16,
            h: 8,
          },
          targets: [
            {
              datasource: ds,
              refId: 'A',
              expr: q('clockwatch_chrony_source_info{%(sel)s}'),
              legendFormat: '__auto',
              range: false,
              instant: true,
              format: 'table',
            },
            {
              datasource: ds,
              refId: 'B',
              expr: q('clockwatch_chrony_source_stratum{%(sel)s}'),
              legendFormat: '__auto',
              range: false,
              instant: true,
              format: 'table',
            },
            {
              datasource: ds,
              refId: 'C',
              expr: q('clockwatch_chrony_source_reachability_ratio{%(sel)s}'),
              legendFormat: '__auto',
              range: false,
              instant: true,
              format: 'table',
            },
            {
              datasource: ds,
              refId: 'D',
              expr: q('clockwatch_chrony_source_last_sample_offset_seconds{%(sel)s}'),
              legendFormat: '__auto',
              range: false,
              instant: true,
              format: 'table',
            },
            {
              datasource: ds,
              refId: 'E',
              expr: q('clockwatch_chrony_source_poll_interval_seconds{%(sel)s}'),
              legendFormat: '__auto',
              range: false,
              instant: true,
              format: 'table',
            },
          ],
          transformations: [
            {
              id: 'merge',
              options: {},
            },
            {
              id: 'organize',
              options: {
                excludeByName: {
                  Time: true,
                  __name__: true,
                  job: true,
                  'Value #A': true,
                },
                renameByName: {
                  'Value #B': 'stratum',
                  'Value #C': 'reachability',
                  'Value #D': 'last offset',
                  'Value #E': 'poll interval',
                },
              },
            },
          ],
          fieldConfig: {
            defaults: {
              custom: {
                align: 'auto',
              },
            },
            overrides: [
              {
                matcher: {
                  id: 'byName',
                  options: 'last offset',
                },
                properties: [
                  {
                    id: 'unit',
                    value: 's',
                  },
                ],
              },
              {
                matcher: {
                  id: 'byName',
                  options: 'poll interval',
                },
                properties: [
                  {
                    id: 'unit',
                    value: 's',
                  },
                ],
              },
              {
                matcher: {
                  id: 'byName',
                  options: 'reachability',
                },
                properties: [
                  {
                    id: 'unit',
                    value: 'percentunit',
                  },
                ],
              },
            ],
          },
          options: {
            showHeader: true,
            cellHeight: 'sm',
          },
        },
        {
          type: 'timeseries',
          id: 12,
          title: 'chrony sync',
          description: "Selectable sources (sync or candidate), chronyd's stratum and leap status (3: not synchronised).",
          datasource: ds,
          gridPos: {
            x: 16,
            y: 19,
            w: 8,
            h: 8,
          },
          targets: [
            {
              datasource: ds,
              refId: 'A',
              expr: q('clockwatch_chrony_selectable_sources{%(sel)s}'),
              legendFormat: '{{instance}} selectable',
              range: true,
              instant: false,
            },
            {
              datasource: ds,
              refId: 'B',
              expr: q('clockwatch_chrony_tracking_stratum{%(sel)s}'),
              legendFormat: '{{instance}} stratum',
              range: true,
              instant: false,
            },
            {
              datasource: ds,
              refId: 'C',
              expr: q('clockwatch_chrony_tracking_leap_status{%(sel)s}'),
              legendFormat: '{{instance}} leap status',
              range: true,
              instant: false,
            },
          ],
          fieldConfig: {
            defaults: {
              unit: 'short',
              custom: {
                drawStyle: 'line',
                lineWidth: 1,
                fillOpacity: 0,
                showPoints: 'never',
                spanNulls: false,
              },
              color: {
                mode: 'palette-classic',
              },
            },
            overrides: [],
          },
          options: {
            legend: {
              displayMode: 'list',
              placement: 'bottom',
              showLegend: true,
            },
            tooltip: {
              mode: 'multi',
              sort: 'none',
            },
          },
        },
        {
          type: 'timeseries',
          id: 13,
          title: 'NTP peers: offsets',
          description: "Offset of each NTP source's last sample as chronyd measured it, of each ntpd peer, and of each server clockwatch probes itself (ntp_probes.servers). Local clock minus peer; positive: local ahead.",
          datasource: ds,
          gridPos: {
            x: 0,
            y: 27,
            w: 12,
            h: 8,
          },
          targets: [
            {
              datasource: ds,
              refId: 'A',
              expr: q('clockwatch_chrony_source_last_sample_offset_seconds{%(sel)s}'),
              legendFormat: '{{instance}} chrony {{source_name}}',
              range: true,
              instant: false,
            },
            {
              datasource: ds,
              refId: 'B',
              expr: q('clockwatch_ntp_probe_offset_seconds{%(sel)s}'),
              legendFormat: '{{instance}} probe {{server}}',
              range: true,
              instant: false,
            },
            {
              datasource: ds,
              refId: 'C',
              expr: q('clockwatch_ntpd_peer_offset_seconds{%(sel)s}'),
              legendFormat: '{{instance}} ntpd {{address}}',
              range: true,
              instant: false,
            },
          ],
          fieldConfig: {
            defaults: {
              unit: 's',
              custom: {
                drawStyle: 'line',
                lineWidth: 1,
                fillOpacity: 0,
                showPoints: 'never',
                spanNulls: false,
              },
              color: {
                mode: 'palette-classic',
              },
            },
            overrides: [],
          },
          options: {
            legend: {
              displayMode: 'list',
              placement: 'bottom',
              showLegend: true,
            },
            tooltip: {
              mode: 'multi',
              sort: 'none',
            },
          },
        },
        {
          type: 'timeseries',
          id: 14,
          title: 'NTP peers: delay and errors',
          description: "chronyd's root delay and root dispersion to the stratum-1 clock, each source's last sample error, the round trip of clockwatch's own probes, and each ntpd peer's delay.",
          datasource: ds,
          gridPos: {
            x: 12,
            y: 27,
            w: 12,
            h: 8,
          },
          targets: [
            {
              datasource: ds,
              refId: 'A',
              expr: q('clockwatch_chrony_tracking_root_delay_seconds{%(sel)s}'),
              legendFormat: '{{instance}} root delay',
              range: true,
              instant: false,
            },
            {
              datasource: ds,
              refId: 'B',
              expr: q('clockwatch_chrony_tracking_root_dispersion_seconds{%(sel)s}'),
              legendFormat: '{{instance}} root dispersion',
              range: true,
              instant: false,
            },
            {
              datasource: ds,
              refId: 'C',
              expr: q('clockwatch_chrony_source_last_sample_error_seconds{%(sel)s}'),
              legendFormat: '{{instance}} chrony {{source_name}} sample error',
              range: true,
              instant: false,
            },
            {
              datasource: ds,
              refId: 'D',
              expr: q('clockwatch_ntp_probe_rtt_seconds{%(sel)s}'),
              legendFormat: '{{instance}} probe {{server}} round trip',
              range: true,
              instant: false,
            },
            {
              datasource: ds,
              refId: 'E',
              expr: q('clockwatch_ntpd_peer_delay_seconds{%(sel)s}'),
              legendFormat: '{{instance}} ntpd {{address}} delay',
              range: true,
              instant: false,
            },
          ],
          fieldConfig: {
            defaults: {
              unit: 's',
              custom: {
                drawStyle: 'line',
                lineWidth: 1,
                fillOpacity: 0,
                showPoints: 'never',
                spanNulls: false,
              },
              color: {
                mode: 'palette-classic',
              },
            },
            overrides: [],
          },
          options: {
            legend: {
              displayMode: 'list',
              placement: 'bottom',
              showLegend: true,
            },
            tooltip: {
              mode: 'multi',
              sort: 'none',
            },
          },
        },
        {
          type: 'row',
          id: 15,
          title: 'Stepdown',
          collapsed: false,
          panels: [],
          gridPos: {
            x: 0,
            y: 35,
            w: 24,
            h: 1,
          },
        },
        {
          type: 'timeseries',
          id: 16,
          title: 'Stepdown subscribers',
          description: "Clients connected to clockwatch's stepdown socket.",
          datasource: ds,
          gridPos: {
            x: 0,
            y: 36,
            w: 6,
            h: 8,
          },
          targets: [
            {
              datasource: ds,
              refId: 'A',
              expr: q('clockwatch_stepdown_subscribers{%(sel)s}'),
              legendFormat: '{{instance}}',
              range: true,
              instant: false,
            },
          ],
          fieldConfig: {
            defaults: {
              unit: 'short',
              custom: {
                drawStyle: 'line',
                lineWidth: 1,
                fillOpacity: 0,
                showPoints: 'never',
                spanNulls: false,
              },
              color: {
                mode: 'palette-classic',
              },
            },
            overrides: [],
          },
          options: {
            legend: {
              displayMode: 'list',
              placement: 'bottom',
              showLegend: true,
            },
            tooltip: {
              mode: 'multi',
              sort: 'none',
            },
          },
        },
        {
          type: 'timeseries',
          id: 17,
          title: 'Stepdown events',
          description: 'Stepdown and resume events announced, by type, reason and drill, and acks received.',
          datasource: ds,
          gridPos: {
            x: 6,
            y: 36,
            w: 10,
            h: 8,
          },
          targets: [
            {
              datasource: ds,
              refId: 'A',
              expr: q('sum by (instance, type, reason, drill) (increase(clockwatch_stepdown_events_total{%(sel)s}[$__rate_interval]))'),
              legendFormat: '{{instance}} {{type}} {{reason}} drill={{drill}}',
              range: true,
              instant: false,
            },
            {
              datasource: ds,
              refId: 'B',
              expr: q('sum by (instance) (increase(clockwatch_stepdown_acks_total{%(sel)s}[$__rate_interval]))'),
              legendFormat: '{{instance}} acks',
              range: true,
              instant: false,
            },
          ],
          fieldConfig: {
            defaults: {
              unit: 'short',
              custom: {
                drawStyle: 'bars',
                lineWidth: 1,
                fillOpacity: 80,
                showPoints: 'never',
                spanNulls: false,
              },
              color: {
                mode: 'palette-classic',
              },
            },
            overrides: [],
          },
          options: {
            legend: {
              displayMode: 'list',
              placement: 'bottom',
              showLegend: true,
            },
            tooltip: {
              mode: 'multi',
              sort: 'none',
            },
          },
        },
        {
          type: 'timeseries',
          id: 18,
          title: 'Stepdown ack latency and disconnects',
          description: "99th percentile of the time from an event to a subscriber's ack, and subscribers disconnected by cause.",
          datasource: ds,
          gridPos: {
            x: 16,
            y: 36,
            w: 8,
            h: 8,
          },
          targets: [
            {
              datasource: ds,
              refId: 'A',
              expr: q('histogram_quantile(0.99, sum by (instance, le) (rate(clockwatch_stepdown_ack_latency_seconds_bucket{%(sel)s}[$__rate_interval])))'),
              legendFormat: '{{instance}} p99 ack latency',
              range: true,
              instant: false,
            },
            {
              datasource: ds,
              refId: 'B',
              expr: q('sum by (instance, cause) (increase(clockwatch_stepdown_disconnects_total{%(sel)s}[$__rate_interval]))'),
              legendFormat: '{{instance}} disconnect {{cause}}',
              range: true,
              instant: false,
            },
          ],
          fieldConfig: {
            defaults: {
              unit: 's',
              custom: {
                drawStyle: 'line',
                lineWidth: 1,
                fillOpacity: 0,
                showPoints: 'never',
                spanNulls: false,
              },
              color: {
                mode: 'palette-classic',
              },
            },
            overrides: [
              {
                matcher: {
                  id: 'byFrameRefID',
                  options: 'B',
                },
                properties: [
                  {
                    id: 'unit',
                    value: 'short',
                  },
                  {
                    id: 'custom.axisPlacement',
                    value: 'right',
                  },
                ],
              },
            ],
          },
          options: {
            legend: {
              displayMode: 'list',
              placement: 'bottom',
              showLegend: true,
            },
            tooltip: {
              mode: 'multi',
              sort: 'none',
            },
          },
        },
        {
          type: 'row',
          id: 19,
          title: 'Agent health',
          collapsed: false,
          panels: [],
          gridPos: {
            x: 0,
            y: 44,
            w: 24,
            h: 1,
          },
        },
        {
          type: 'table',
          id: 20,
          title: 'Agent status',
          description: "Whether Prometheus scrapes clockwatch, and whether clockwatch can read the clocks, the kernel, chronyd and ntpd, loaded its configuration, gets the kernel's clock-set notifications and persists its step journal (1 yes, 0 no).",
          datasource: ds,
          gridPos: {
            x: 0,
            y: 45,
            w: 14,
            h: 7,
          },
          targets: [
            {
              datasource: ds,
              refId: 'A',
              expr: q('up{%(sel)s}'),
              legendFormat: '__auto',
              range: false,
              instant: true,
              format: 'table',
            },
            {
              datasource: ds,
              refId: 'B',
              expr: q('clockwatch_clock_up{%(sel)s}'),
              legendFormat: '__auto',
              range: false,
              instant: true,
              format: 'table',
            },
            {
              datasource: ds,
              refId: 'C',
              expr: q('clockwatch_kernel_up{%(sel)s}'),
              legendFormat: '__auto',
              range: false,
              instant: true,
              format: 'table',
            },
            {
              datasource: ds,
              refId: 'D',
              expr: q('clockwatch_chrony_up{%(sel)s}'),
              legendFormat: '__auto',
              range: false,
              instant: true,
              format: 'table',
            },
            {
              datasource: ds,
              refId: 'H',
              expr: q('clockwatch_ntpd_up{%(sel)s}'),
              legendFormat: '__auto',
              range: false,
              instant: true,
              format: 'table',
            },
            {
              datasource: ds,
              refId: 'E',
              expr: q('clockwatch_config_last_reload_successful{%(sel)s}'),
              legendFormat: '__auto',
              range: false,
              instant: true,
              format: 'table',
            },
            {
              datasource: ds,
              refId: 'F',
              expr: q('clockwatch_clock_set_watcher_up{%(sel)s}'),
              legendFormat: '__auto',
              range: false,
              instant: true,
              format: 'table',
            },
            {
              datasource: ds,
              refId: 'G',
              expr: q('clockwatch_journal_persistence_ok{%(sel)s}'),
              legendFormat: '__auto',
              range: false,
              instant: true,
              format: 'table',
            },
          ],
          transformations: [
            {
              id: 'merge',
              options: {},
            },
            {
              id: 'organize',
              options: {
                excludeByName: {
                  Time: true,
                  __name__: true,
                },
                renameByName: {
                  'Value #A': 'scraped',
                  'Value #B': 'clocks',
                  'Value #C': 'kernel',
                  'Value #D': 'chrony',
                  'Value #E': 'config',
                  'Value #F': 'step watcher',
                  'Value #G': 'journal',
                  'Value #H': 'ntpd',
                },
              },
            },
          ],
          fieldConfig: {
            defaults: {
              custom: {
                align: 'auto',
              },
            },
            overrides: [],
          },
          options: {
            showHeader: true,
            cellHeight: 'sm',
          },
        },
        {
          type: 'table',
          id: 21,
          title: 'Versions',
          description: 'clockwatch build running on each instance.',
          datasource: ds,
          gridPos: {
            x: 14,
            y: 45,
            w: 10,
            h: 7,
          },
          targets: [
            {
              datasource: ds,
              refId: 'A',
              expr: q('clockwatch_build_info{%(sel)s}'),
              legendFormat: '__auto',
              range: false,
              instant: true,
              format: 'table',
            },
          ],
          transformations: [
            {
              id: 'merge',
              options: {},
            },
            {
              id: 'organize',
              options: {
                excludeByName: {
                  Time: true,
                  __name__: true,
                  Value: true,
                  job: true,
                },
                renameByName: {},
              },
            },
          ],
          fieldConfig: {
            defaults: {
              custom: {
                align: 'auto',
              },
            },
            overrides: [],
          },
          options: {
            showHeader: true,
            cellHeight: 'sm',
          },
        },
        {
          type: 'timeseries',
          id: 22,
          title: 'Collector duration',
          description: 'Time each clockwatch collector took at the last scrape, and collectors that failed (0).',
          datasource: ds,
          gridPos: {
            x: 0,
            y: 52,
            w: 12,
            h: 7,
          },
          targets: [
            {
              datasource: ds,
              refId: 'A',
              expr: q('clockwatch_scrape_collector_duration_seconds{%(sel)s}'),
              legendFormat: '{{instance}} {{collector}}',
              range: true,
              instant: false,
            },
            {
              datasource: ds,
              refId: 'B',
              expr: q('clockwatch_scrape_collector_success{%(sel)s} == 0'),
              legendFormat: '{{instance}} {{collector}} failed',
              range: true,
              instant: false,
            },
          ],
          fieldConfig: {
            defaults: {
              unit: 's',
              custom: {
                drawStyle: 'line',
                lineWidth: 1,
                fillOpacity: 0,
                showPoints: 'never',
                spanNulls: false,
              },
              color: {
                mode: 'palette-classic',
              },
            },
            overrides: [],
          },
          options: {
            legend: {
              displayMode: 'list',
              placement: 'bottom',
              showLegend: true,
            },
            tooltip: {
              mode: 'multi',
              sort: 'none',
            },
          },
        },
        {
          type: 'timeseries',
          id: 23,
          title: 'clockwatch resources',
          description: 'Resident memory and CPU used by clockwatch.',
          datasource: ds,
          gridPos: {
            x: 12,
            y: 52,
            w: 12,
            h: 7,
          },
          targets: [
            {
              datasource: ds,
              refId: 'A',
              expr: q('process_resident_memory_bytes{%(sel)s}'),
              legendFormat: '{{instance}} RSS',
              range: true,
              instant: false,
            },
            {
              datasource: ds,
              refId: 'B',
              expr: q('rate(process_cpu_seconds_total{%(sel)s}[$__rate_interval])'),
              legendFormat: '{{instance}} CPU',
              range: true,
              instant: false,
            },
          ],
          fieldConfig: {
            defaults: {
              unit: 'bytes',
              custom: {
                drawStyle: 'line',
                lineWidth: 1,
                fillOpacity: 0,
                showPoints: 'never',
                spanNulls: false,
              },
              color: {
                mode: 'palette-classic',
              },
            },
            overrides: [
              {
                matcher: {
                  id: 'byFrameRefID',
                  options: 'B',
                },
                properties: [
                  {
                    id: 'unit',
                    value: 'percentunit',
                  },
                  {
                    id: 'custom.axisPlacement',
                    value: 'right',
                  },
                ],
              },
            ],
          },
          options: {
            legend: {
              displayMode: 'list',
              placement: 'bottom',
              showLegend: true,
            },
            tooltip: {
              mode: 'multi',
              sort: 'none',
            },
          },
        },
        {
          type: 'row',
          id: 24,
          title: "Fleet's clock (peers)",
          collapsed: false,
          panels: [],
          gridPos: {
            x: 0,
            y: 59,
            w: 24,
            h: 1,
          },
        },
        {
          type: 'timeseries',
          id: 25,
          title: 'Skew to the fleet, per node',
          description: "Each node's clock against the median of the fleet's clocks as it measures them (clockwatch_peer_fleet_offset_seconds, negated: positive, the node is ahead). Only with peers: configured (docs/peers.md). A node the majority finds more than peers.max_offset away steps down with reason peer_offset.",
          datasource: ds,
          gridPos: {
            x: 0,
            y: 60,
            w: 12,
            h: 8,
          },
          targets: [
            {
              datasource: ds,
              refId: 'A',
              expr: q('-clockwatch_peer_fleet_offset_seconds{%(sel)s}'),
              legendFormat: '{{instance}}',
              range: true,
              instant: false,
            },
          ],
          fieldConfig: {
            defaults: {
              unit: 's',
              custom: {
                drawStyle: 'line',
                lineWidth: 1,
                fillOpacity: 0,
                showPoints: 'never',
                spanNulls: false,
              },
              color: {
                mode: 'palette-classic',
              },
            },
            overrides: [],
          },
          options: {
            legend: {
              displayMode: 'table',
              placement: 'right',
              showLegend: true,
              calcs: ['lastNotNull', 'max', 'min'],
            },
            tooltip: {
              mode: 'multi',
              sort: 'desc',
            },
          },
        },
        {
          type: 'heatmap',
          id: 26,
          title: 'Offsets between nodes',
          description: 'Every offset measured between two nodes (clockwatch_peer_offset_seconds: the peer minus the node that measured it), bucketed: a healthy fleet is one band around 0; a node off the fleet shows as two bands at ±its offset.',
          datasource: ds,
          gridPos: {
            x: 12,
            y: 60,
            w: 12,
            h: 8,
          },
          targets: [
            {
              datasource: ds,
              refId: 'A',
              expr: q('clockwatch_peer_offset_seconds{%(sel)s}'),
              legendFormat: '{{instance}} → {{peer}}',
              range: true,
              instant: false,
            },
          ],
          fieldConfig: {
            defaults: {
              custom: {
                scaleDistribution: {
                  type: 'linear',
                },
              },
            },
            overrides: [],
          },
          options: {
            calculate: true,
            calculation: {
              yBuckets: {
                mode: 'count',
                value: '40',
              },
            },
            cellGap: 1,
            color: {
              mode: 'scheme',
              scheme: 'Oranges',
              steps: 64,
            },
            yAxis: {
              unit: 's',
            },
            tooltip: {
              mode: 'single',
              yHistogram: true,
            },
            legend: {
              show: true,
            },
          },
        },
        {
          type: 'timeseries',
          id: 27,
          title: 'Fleet judge',
          description: 'Per node: the peers measured in the last round, those more than peers.max_offset away, and whether the majority finds the node outside (1). With fewer than two measured the judge decides nothing.',
          datasource: ds,
          gridPos: {
            x: 0,
            y: 68,
            w: 12,
            h: 7,
          },
          targets: [
            {
              datasource: ds,
              refId: 'A',
              expr: q('clockwatch_peer_measured{%(sel)s}'),
              legendFormat: '{{instance}} measured',
              range: true,
              instant: false,
            },
            {
              datasource: ds,
              refId: 'B',
              expr: q('clockwatch_peer_disagreeing{%(sel)s}'),
              legendFormat: '{{instance}} disagreeing',
              range: true,
              instant: false,
            },
            {
              datasource: ds,
              refId: 'C',
              expr: q('clockwatch_peer_outside{%(sel)s}'),
              legendFormat: '{{instance}} outside',
              range: true,
              instant: false,
            },
          ],
          fieldConfig: {
            defaults: {
              unit: 'short',
              custom: {
                drawStyle: 'line',
                lineWidth: 1,
                fillOpacity: 0,
                showPoints: 'never',
                spanNulls: false,
              },
              color: {
                mode: 'palette-classic',
              },
            },
            overrides: [],
          },
          options: {
            legend: {
              displayMode: 'list',
              placement: 'bottom',
              showLegend: true,
            },
            tooltip: {
              mode: 'multi',
              sort: 'none',
            },
          },
        },
        {
          type: 'timeseries',
          id: 28,
          title: 'Peer round trips',
          description: 'Round trip of the best exchange with each peer in the last round (clockwatch_peer_rtt_seconds): half of it bounds the offset error from the path. Samples over peers.max_rtt are dropped.',
          datasource: ds,
          gridPos: {
            x: 12,
            y: 68,
            w: 12,
            h: 7,
          },
          targets: [
            {
              datasource: ds,
              refId: 'A',
              expr: q('clockwatch_peer_rtt_seconds{%(sel)s}'),
              legendFormat: '{{instance}} → {{peer}}',
              range: true,
              instant: false,
            },
          ],
          fieldConfig: {
            defaults: {
              unit: 's',
              custom: {
                drawStyle: 'line',
                lineWidth: 1,
                fillOpacity: 0,
                showPoints: 'never',
                spanNulls: false,
              },
              color: {
                mode: 'palette-classic',
              },
            },
            overrides: [],
          },
          options: {
            legend: {
              displayMode: 'list',
              placement: 'bottom',
              showLegend: true,
            },
            tooltip: {
              mode: 'multi',
              sort: 'none',
            },
          },
        },
      ],
  }
