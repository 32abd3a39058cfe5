// Alerts. Severities: critical pages (clock steps and offsets: the clock is
// wrong now), warning opens a ticket, info is for the record. Every alert
// has a section of docs/runbook.md that says what to do; runbook_url links
// it through _config.runbookURLPattern.
//
// Conventions (checked by alerts/rules_test.go): summary is a static
// sentence ending in a period; description names the instance (or the job)
// and the value; each alert is one plain object below, so a rule can be
// edited, or replaced by an importer (prometheusAlerts+:: ...), on its own.
local utils = import '../lib/utils.libsonnet';

{
  _config+:: {},

  prometheusAlerts+:: {
    // The thresholds as utils.number writes them (exactly, as the chart's
    // printf "%g" does; jsonnet's own %g keeps six digits after the
    // leading zeros), and as durations for the descriptions.
    local c = $._config {
      [k]: utils.number($._config[k])
      for k in std.objectFields($._config)
      if std.isNumber($._config[k])
    } + {
      by: utils.by($._config),
      jobBy: utils.jobBy($._config),
      offsetCritical: utils.duration($._config.offsetCriticalSeconds),
      offsetWarning: utils.duration($._config.offsetWarningSeconds),
      skewCritical: utils.duration($._config.skewCriticalSeconds),
      fleetSkewWarning: utils.duration($._config.fleetSkewWarningSeconds),
      stepForwardCritical: utils.duration($._config.stepForwardCriticalSeconds),
      errorBoundWarning: utils.duration($._config.errorBoundWarningSeconds),
      ptpOffsetWarning: utils.duration($._config.ptpOffsetWarningSeconds),
      ptpErrorBoundWarning: utils.duration($._config.ptpErrorBoundWarningSeconds),
    },
    local page = c.criticalSeverity,

    // withDefaults flattens the descriptions and adds the runbook link.
    local withDefaults(a) = a {
      annotations+: {
        description: utils.oneLine(super.description),
        runbook_url: c.runbookURLPattern % std.asciiLower(a.alert),
      },
    },

    groups+: [
      {
        name: 'clockwatch',
        rules: std.map(withDefaults, [
          // --- The clock is wrong now: pages ---------------------------
          {
            alert: 'ClockwatchClockOffsetCritical',
            expr: |||
              abs(clockwatch_chrony_tracking_system_time_offset_seconds{%(clockwatchSelector)s}) > %(offsetCriticalSeconds)s
              or abs(clockwatch_ntpd_offset_seconds{%(clockwatchSelector)s}) > %(offsetCriticalSeconds)s
            ||| % c,
            'for': '1m',
            labels: { severity: page },
            annotations: {
              summary: 'The time daemon finds the clock far from true time.',
              description: |||
                The time daemon (chronyd or ntpd) on {{ $labels.instance }}
                estimates the system clock is {{ $value | humanizeDuration }} away
                from true time (limit %(offsetCritical)s) and is slewing it back slowly. Timestamps, leases and TLS checks on
                this node are wrong by that much until it has caught up.
              ||| % c,
            },
          },
          {
            alert: 'ClockwatchClockOffsetNtpCritical',
            expr: 'min by (%(by)s) (abs(clockwatch_ntp_probe_offset_seconds{%(clockwatchSelector)s})) > %(offsetCriticalSeconds)s' % c,
            'for': '1m',
            labels: { severity: page },
            annotations: {
              summary: 'The clock is far from every NTP server clockwatch probes.',
              description: |||
                clockwatch's own NTP queries from {{ $labels.instance }} find the
                clock at least {{ $value | humanizeDuration }} away from every
                server in ntp_probes.servers (limit %(offsetCritical)s). This does not rely on
                the node's time daemon: if chronyd claims a small offset, it
                follows a wrong source.
              ||| % c,
            },
          },
          {
            alert: 'ClockwatchClockSkewCritical',
            expr: 'abs(instance:clockwatch_clock_skew_seconds:scrape{%(clockwatchSelector)s}) > %(skewCriticalSeconds)s' % c,
            'for': '2m',
            labels: { severity: page },
            annotations: {
              summary: "The clock differs from the Prometheus server's clock.",
              description: |||
                The wall clock of {{ $labels.instance }}, read by clockwatch while
                Prometheus scraped it, differs by {{ $value | humanizeDuration }}
                from the Prometheus server's own clock (limit %(skewCritical)s). This check
                does not trust the node's time daemon: either the node's clock or
                the Prometheus server's is wrong.
              ||| % c,
            },
          },
          {
            // The fleet's majority judge (peers:): this clock disagrees
            // with a strict majority of the other agents it measured.
            // clockwatch stepped down (peer_offset) after its grace.
            alert: 'ClockwatchClockOffsetPeersCritical',
            expr: 'abs(clockwatch_peer_fleet_offset_seconds{%(clockwatchSelector)s}) and on (%(by)s) clockwatch_peer_outside{%(clockwatchSelector)s} == 1' % c,
            'for': '1m',
            labels: { severity: page },
            annotations: {
              summary: "The clock disagrees with the majority of the other nodes' clocks.",
              description: |||
                clockwatch on {{ $labels.instance }} finds its clock
                {{ $value | humanizeDuration }} from the median of the fleet's clocks, and
                more than peers.max_offset away from most of the peers it measured
                ({{ with printf `clockwatch_peer_disagreeing{instance="%s",job="%s"}` $labels.instance $labels.job | query }}{{ . | first | value }}{{ end }}
                of {{ with printf `clockwatch_peer_measured{instance="%s",job="%s"}` $labels.instance $labels.job | query }}{{ . | first | value }}{{ end }}),
                for a minute. Its own time daemon may vouch for it: the
                fleet does not. Lock holders on it were told to step down
                (reason peer_offset).
              |||,
            },
          },
          {
            alert: 'ClockwatchClockStepBackward',
            expr: 'instance:clockwatch_clock_steps:increase10m{%(clockwatchSelector)s,direction="backward"} > 0' % c,
            labels: { severity: page },
            annotations: {
              summary: 'The wall clock stepped backward.',
              description: |||
                The wall clock of {{ $labels.instance }} jumped backward in the
                last 10 minutes (last step:
                {{ with printf `clockwatch_clock_last_step_seconds{instance="%s",job="%s"}` $labels.instance $labels.job | query }}{{ . | first | value | humanizeDuration }}{{ end }}). Time read on this node repeated
                itself: ordering by timestamp, TTLs and leases there cannot be
                trusted across the step.
              |||,
            },
          },
          {
            alert: 'ClockwatchClockStepForward',
            expr: |||
              instance:clockwatch_clock_steps:increase10m{%(clockwatchSelector)s,direction="forward"} > 0
              and on (%(by)s) clockwatch_clock_last_step_seconds{%(clockwatchSelector)s} > %(stepForwardCriticalSeconds)s
            ||| % c,
            labels: { severity: page },
            annotations: {
              summary: 'The wall clock stepped forward.',
              description: |||
                The wall clock of {{ $labels.instance }} jumped forward in the
                last 10 minutes (last step:
                {{ with printf `clockwatch_clock_last_step_seconds{instance="%%s",job="%%s"}` $labels.instance $labels.job | query }}{{ . | first | value | humanizeDuration }}{{ end }};
                limit %(stepForwardCritical)s). Leases and
                timeouts on this node expired early by that much.
              ||| % c,
            },
          },

          // --- The clock may soon be wrong: tickets ----------------------
          {
            alert: 'ClockwatchClockOffsetWarning',
            expr: |||
              abs(clockwatch_chrony_tracking_system_time_offset_seconds{%(clockwatchSelector)s}) > %(offsetWarningSeconds)s
              or abs(clockwatch_ntpd_offset_seconds{%(clockwatchSelector)s}) > %(offsetWarningSeconds)s
            ||| % c,
            'for': '5m',
            labels: { severity: 'warning' },
            annotations: {
              summary: 'The time daemon finds the clock drifting away from true time.',
              description: |||
                The time daemon (chronyd or ntpd) on {{ $labels.instance }} has
                estimated the system clock {{ $value | humanizeDuration }} away from
                true time for 5 minutes (warning at %(offsetWarning)s, page at %(offsetCritical)s).
              ||| % c,
            },
          },
          {
            alert: 'ClockwatchClockOffsetNtpWarning',
            expr: 'min by (%(by)s) (abs(clockwatch_ntp_probe_offset_seconds{%(clockwatchSelector)s})) > %(offsetWarningSeconds)s' % c,
            'for': '5m',
            labels: { severity: 'warning' },
            annotations: {
              summary: 'The clock is drifting away from every NTP server clockwatch probes.',
              description: |||
                clockwatch's own NTP queries from {{ $labels.instance }} have found
                the clock at least {{ $value | humanizeDuration }} away from every
                server probed for 5 minutes (warning at %(offsetWarning)s, page at %(offsetCritical)s).
              ||| % c,
            },
          },
          // The signal helper replaces this expression (STA_UNSYNC alone
          // misleads when chronyd runs without rtcsync).
          {
            alert: 'ClockwatchNotSynchronised',
            // As the unsynchronized stepdown trigger judges: by the time
            // daemon's own status while it answers (chronyd: leap status 3,
            // or no selectable source: with every source lost chronyd keeps
            // leap status normal), else by the kernel's maxerror (saturated
            // at 16 s: nothing disciplines the clock). STA_UNSYNC alone is
            // not enough: chronyd clears it only with rtcsync
            // (clockwatch_kernel_synchronized is 0 on such hosts).
            expr: |||
              max by (%(by)s) (
                  (clockwatch_chrony_tracking_leap_status{%(clockwatchSelector)s} == 3 and on (%(by)s) clockwatch_chrony_up{%(clockwatchSelector)s} == 1)
                or
                  (clockwatch_chrony_selectable_sources{%(clockwatchSelector)s} == 0 and on (%(by)s) clockwatch_chrony_up{%(clockwatchSelector)s} == 1)
                or
                  (clockwatch_ntpd_synchronized{%(clockwatchSelector)s} == 0 and on (%(by)s) clockwatch_ntpd_up{%(clockwatchSelector)s} == 1)
                or
                  (clockwatch_kernel_maxerror_seconds{%(clockwatchSelector)s} >= 16
                    unless on (%(by)s) (clockwatch_chrony_up{%(clockwatchSelector)s} == 1 or clockwatch_ntpd_up{%(clockwatchSelector)s} == 1))
              )
            ||| % c,
            'for': '10m',
            labels: { severity: 'warning' },
            annotations: {
              summary: 'The clock is not synchronised.',
              description: |||
                The clock of {{ $labels.instance }} has not been synchronised for
                10 minutes: its time daemon reports no time solution or, with no
                time daemon answering, the kernel's maximum error sits at its 16 s
                ceiling. Nothing disciplines it, so it drifts freely.
              |||,
            },
          },
          {
            alert: 'ClockwatchChronyNotSynchronised',
            expr: 'clockwatch_chrony_tracking_leap_status{%(clockwatchSelector)s} == 3' % c,
            'for': '5m',
            labels: { severity: 'warning' },
            annotations: {
              summary: 'chronyd is not synchronised.',
              description: |||
                chronyd on {{ $labels.instance }} has had leap status 3 (not
                synchronised) for 5 minutes: it has no usable reference.
              |||,
            },
          },
          {
            alert: 'ClockwatchChronyNoSelectableSources',
            expr: 'clockwatch_chrony_selectable_sources{%(clockwatchSelector)s} == 0' % c,
            'for': '5m',
            labels: { severity: 'warning' },
            annotations: {
              summary: 'chronyd has no selectable source.',
              description: |||
                chronyd on {{ $labels.instance }} has had no source in state sync
                or candidate for 5 minutes: every source is unreachable, a
                falseticker, jittery or an outlier. The clock is free-running.
              |||,
            },
          },
          {
            alert: 'ClockwatchLeapSecondPending',
            expr: |||
              clockwatch_kernel_leap_pending{%(clockwatchSelector)s} != 0
              or clockwatch_chrony_tracking_leap_status{%(clockwatchSelector)s} == 1 or clockwatch_chrony_tracking_leap_status{%(clockwatchSelector)s} == 2
              or clockwatch_ntpd_leap_status{%(clockwatchSelector)s} == 1 or clockwatch_ntpd_leap_status{%(clockwatchSelector)s} == 2
            ||| % c,
            'for': '5m',
            labels: { severity: 'warning' },
            annotations: {
              summary: 'A leap second is pending.',
              description: |||
                {{ $labels.instance }} is announcing a leap second ({{ $value }}:
                1 insert, 2 or -1 delete). None is scheduled by the IERS: a source
                is probably announcing a bogus one.
              |||,
            },
          },
          {
            alert: 'ClockwatchErrorBoundHigh',
            expr: |||
              clockwatch_chrony_clock_error_bound_seconds{%(clockwatchSelector)s} > %(errorBoundWarningSeconds)s
              or clockwatch_ntpd_clock_error_bound_seconds{%(clockwatchSelector)s} > %(errorBoundWarningSeconds)s
            ||| % c,
            'for': '10m',
            labels: { severity: 'warning' },
            annotations: {
              summary: 'The clock error bound is high.',
              description: |||
                The time daemon's figures on {{ $labels.instance }} only guarantee the clock
                to within {{ $value | humanizeDuration }} (|offset| + root
                dispersion + root delay/2; limit %(errorBoundWarning)s) for 10 minutes. Anything
                that needs bounded clock error (leases, commit-wait) must assume
                that much.
              ||| % c,
            },
          },
          // ptp4l: microseconds, not NTP's milliseconds. Absent (no
          // series) on nodes without ptp4l.
          {
            alert: 'ClockwatchPtp4lNotSynchronised',
            expr: 'clockwatch_ptp4l_synchronized{%(clockwatchSelector)s} == 0 and on (%(by)s) clockwatch_ptp4l_up{%(clockwatchSelector)s} == 1' % c,
            'for': '5m',
            labels: { severity: 'warning' },
            annotations: {
              summary: 'ptp4l is not synchronised.',
              description: |||
                ptp4l on {{ $labels.instance }} has not been synchronised for 5
                minutes: its port is not SLAVE (UNCALIBRATED: not locked;
                LISTENING: no master; FAULTY), nor MASTER as a grandmaster
                traceable to a primary reference. clockwatch told lock holders
                to step down after ptp.triggers.unsynchronized.grace.
              |||,
            },
          },
          {
            alert: 'ClockwatchPtp4lOffsetHigh',
            expr: 'abs(clockwatch_ptp4l_offset_from_master_seconds{%(clockwatchSelector)s}) > %(ptpOffsetWarningSeconds)s' % c,
            'for': '5m',
            labels: { severity: 'warning' },
            annotations: {
              summary: 'ptp4l finds the clock far from its master.',
              description: |||
                ptp4l on {{ $labels.instance }} has measured an offset from its
                master of {{ $value | humanizeDuration }} for 5 minutes (limit
                %(ptpOffsetWarning)s): the servo is not holding the clock. With
                hardware timestamps this is the PHC's offset.
              ||| % c,
            },
          },
          {
            alert: 'ClockwatchPtp4lErrorBoundHigh',
            expr: 'clockwatch_ptp4l_clock_error_bound_seconds{%(clockwatchSelector)s} > %(ptpErrorBoundWarningSeconds)s' % c,
            'for': '10m',
            labels: { severity: 'warning' },
            annotations: {
              summary: 'The PTP clock error bound is high.',
              description: |||
                ptp4l's figures on {{ $labels.instance }} only guarantee the clock
                to within {{ $value | humanizeDuration }} (|offset| + mean path
                delay + the grandmaster's accuracy; limit %(ptpErrorBoundWarning)s)
                for 10 minutes: a long or asymmetric path, or a poor grandmaster.
              ||| % c,
            },
          },
          {
            alert: 'ClockwatchPtp4lGrandmasterChanged',
            expr: 'increase(clockwatch_ptp4l_grandmaster_changes_total{%(clockwatchSelector)s}[15m]) > 0' % c,
            labels: { severity: 'warning' },
            annotations: {
              summary: 'The PTP grandmaster changed.',
              description: |||
                ptp4l on {{ $labels.instance }} has followed another grandmaster in
                the last 15 minutes: the time can move by the two grandmasters'
                difference, and clockwatch told lock holders to step down
                (grandmaster_changed).
              |||,
            },
          },
          {
            alert: 'ClockwatchFrequencyCorrectionLarge',
            expr: 'abs(clockwatch_kernel_frequency_offset_ratio{%(clockwatchSelector)s}) * 1e6 > %(frequencyCorrectionWarningPPM)s' % c,
            'for': '1h',
            labels: { severity: 'warning' },
            annotations: {
              summary: 'The clock needs a large frequency correction.',
              description: |||
                The kernel of {{ $labels.instance }} has corrected the clock's
                frequency by {{ $value | printf "%%.1f" }} ppm (limit %(frequencyCorrectionWarningPPM)s ppm) for
                an hour. The oscillator or the VM's clock source is unusually bad,
                or a time daemon is following a wrong source.
              ||| % c,
            },
          },
          {
            alert: 'ClockwatchKernelMaxErrorSaturated',
            expr: 'clockwatch_kernel_maxerror_seconds{%(clockwatchSelector)s} >= 16' % c,
            'for': '10m',
            labels: { severity: 'warning' },
            annotations: {
              summary: "The kernel's maximum clock error is saturated.",
              description: |||
                The kernel's maximum error bound on {{ $labels.instance }} has sat
                at its 16 s ceiling for 10 minutes: no time daemon has disciplined
                the clock since boot, since the clock was last set, or for at
                least 9 hours.
              |||,
            },
          },
          {
            alert: 'ClockwatchClockSkewFleet',
            expr: 'job:clockwatch_clock_skew_seconds:spread{%(clockwatchSelector)s} > %(fleetSkewWarningSeconds)s' % c,
            'for': '5m',
            labels: { severity: 'warning' },
            annotations: {
              summary: 'The clocks of one job have spread apart.',
              description: |||
                The wall clocks of the nodes of job {{ $labels.job }} have spread
                {{ $value | humanizeDuration }} apart (largest minus smallest skew
                against the Prometheus server, limit %(fleetSkewWarning)s) for 5 minutes. Look at
                instance:clockwatch_clock_skew_seconds:scrape to find the outliers.
              ||| % c,
            },
          },

          // --- Sources and the agent -------------------------------------
          {
            alert: 'ClockwatchChronyDown',
            expr: 'clockwatch_chrony_up{%(clockwatchSelector)s} == 0' % c,
            'for': '2m',
            labels: { severity: 'warning' },
            annotations: {
              summary: 'clockwatch cannot reach chronyd.',
              description: |||
                clockwatch on {{ $labels.instance }} has failed to poll chronyd
                for 2 minutes: chronyd is stopped, or clockwatch may not use its
                socket. clockwatch's log says which.
              |||,
            },
          },
          {
            alert: 'ClockwatchNtpProbeDown',
            expr: 'clockwatch_ntp_probe_up{%(clockwatchSelector)s} == 0' % c,
            'for': '10m',
            labels: { severity: 'warning' },
            annotations: {
              summary: 'An NTP server does not answer clockwatch.',
              description: |||
                clockwatch on {{ $labels.instance }} has had no valid answer from
                NTP server {{ $labels.server }} for 10 minutes (timeouts, refusals
                or answers rejected as unusable): the independent offset check
                has one server fewer.
              |||,
            },
          },
          {
            alert: 'ClockwatchPeerUnreachable',
            expr: 'clockwatch_peer_up{%(clockwatchSelector)s} == 0' % c,
            'for': '10m',
            labels: { severity: 'warning' },
            annotations: {
              summary: 'A peer does not answer clockwatch.',
              description: |||
                clockwatch on {{ $labels.instance }} has not measured peer
                {{ $labels.peer }} for 10 minutes (timeouts, refused or unusable
                replies, round trips over peers.max_rtt): the fleet's judge has one
                peer fewer, and applications watching that peer's clock are told
                it is unknown.
              |||,
            },
          },
          {
            // A node that measures fewer than two peers decides nothing:
            // the stepdown state stays as it was. In a fleet larger than
            // peers.sample the per-peer series rotate; this one does not.
            alert: 'ClockwatchFleetJudgeUndecided',
            expr: 'clockwatch_peer_measured{%(clockwatchSelector)s} < 2 and on (%(by)s) clockwatch_peer_discovered{%(clockwatchSelector)s} >= 2' % c,
            'for': '10m',
            labels: { severity: 'warning' },
            annotations: {
              summary: "clockwatch cannot compare the clock with the fleet's.",
              description: |||
                clockwatch on {{ $labels.instance }} has measured only
                {{ $value }} of its peers in each round for 10 minutes: with fewer
                than two the fleet's judge decides nothing, so this node would not
                step down if its clock left the fleet's (a partition, a firewall
                on peers.listen's UDP port, peers.allow or a key that differs).
              |||,
            },
          },
          {
            alert: 'ClockwatchNtpdDown',
            expr: 'clockwatch_ntpd_up{%(clockwatchSelector)s} == 0' % c,
            'for': '2m',
            labels: { severity: 'warning' },
            annotations: {
              summary: 'clockwatch cannot reach ntpd.',
              description: |||
                clockwatch on {{ $labels.instance }} has failed to query ntpd over
                its mode 6 control port for 2 minutes: ntpd is stopped, or does
                not answer control queries from loopback. clockwatch's log says
                which.
              |||,
            },
          },
          {
            alert: 'ClockwatchPtp4lDown',
            expr: 'clockwatch_ptp4l_up{%(clockwatchSelector)s} == 0' % c,
            'for': '2m',
            labels: { severity: 'warning' },
            annotations: {
              summary: 'clockwatch cannot reach ptp4l.',
              description: |||
                clockwatch on {{ $labels.instance }} has failed to query ptp4l over
                its management socket for 2 minutes, after finding it: ptp4l is
                stopped, its socket moved (uds_address), or it ignores the domain
                clockwatch asks in (ptp.domain). clockwatch's log says which.
              |||,
            },
          },
          {
            alert: 'ClockwatchDown',
            expr: 'up{%(clockwatchSelector)s} == 0' % c,
            'for': '2m',
            labels: { severity: 'warning' },
            annotations: {
              summary: 'clockwatch is down.',
              description: |||
                Prometheus has failed to scrape clockwatch on {{ $labels.instance }}
                for 2 minutes. Nothing watches that node's clock meanwhile.
              |||,
            },
          },
          {
            alert: 'ClockwatchNotScraped',
            expr: 'absent(up{%(clockwatchSelector)s})' % c,
            'for': '10m',
            labels: { severity: 'warning' },
            annotations: {
              summary: 'No clockwatch target is scraped.',
              description: |||
                Prometheus has had no target matching {%(clockwatchSelector)s} for 10 minutes:
                service discovery or the scrape configuration lost them, so no
                clock alert can fire.
              ||| % c,
            },
          },
          {
            alert: 'ClockwatchCollectorFailing',
            expr: 'clockwatch_scrape_collector_success{%(clockwatchSelector)s} == 0' % c,
            'for': '5m',
            labels: { severity: 'warning' },
            annotations: {
              summary: 'A clockwatch collector fails.',
              description: |||
                clockwatch on {{ $labels.instance }} has failed to read its
                {{ $labels.collector }} collector for 5 minutes; those metrics are
                missing. A seccomp filter (ProtectClock=yes) blocks the kernel one.
              |||,
            },
          },
          {
            alert: 'ClockwatchStepWatcherDown',
            expr: 'clockwatch_clock_set_watcher_up{%(clockwatchSelector)s} == 0' % c,
            'for': '10m',
            labels: { severity: 'warning' },
            annotations: {
              summary: "clockwatch does not get the kernel's clock-set notifications.",
              description: |||
                clockwatch on {{ $labels.instance }} has not been able to watch the
                kernel's clock-set notifications for 10 minutes: it still sees
                steps by sampling, but up to one sampling interval late and only
                above the slew allowance.
              |||,
            },
          },
          {
            alert: 'ClockwatchJournalNotPersisted',
            expr: 'clockwatch_journal_persistence_ok{%(clockwatchSelector)s} == 0' % c,
            'for': '10m',
            labels: { severity: 'warning' },
            annotations: {
              summary: 'clockwatch cannot persist its step journal.',
              description: |||
                clockwatch on {{ $labels.instance }} has run without persistence
                for 10 minutes: step events and the clock epoch are not saved, so
                a restart loses them and steps made while it was down go unseen.
              |||,
            },
          },
          {
            alert: 'ClockwatchStepdownAnnounced',
            expr: 'sum by (%(by)s, reason) (instance:clockwatch_stepdown_events:increase10m{%(clockwatchSelector)s,type="stepdown",drill="false"}) > 0' % c,
            labels: { severity: 'warning' },
            annotations: {
              summary: 'clockwatch told lock holders to step down.',
              description: |||
                clockwatch on {{ $labels.instance }} announced a stepdown with
                reason {{ $labels.reason }} in the last 10 minutes: local lock
                holders and leaders were told this node's clock cannot be trusted.
              |||,
            },
          },
          {
            alert: 'ClockwatchStepdownUnacknowledged',
            expr: 'instance:clockwatch_stepdown_unacked:increase10m{%(clockwatchSelector)s} > 0.5' % c,
            'for': '1m',
            labels: { severity: 'warning' },
            annotations: {
              summary: 'Stepdown subscribers did not acknowledge.',
              description: |||
                About {{ $value | humanize }} stepdown message(s) sent by
                clockwatch on {{ $labels.instance }} in the last 10 minutes have
                not been acknowledged after a minute: a subscriber may not have
                stepped down.
              |||,
            },
          },
          {
            alert: 'ClockwatchStepdownDrill',
            expr: 'sum by (%(by)s, reason) (instance:clockwatch_stepdown_events:increase10m{%(clockwatchSelector)s,type="stepdown",drill="true"}) > 0' % c,
            labels: { severity: 'info' },
            annotations: {
              summary: 'A stepdown drill ran.',
              description: |||
                A stepdown drill with reason {{ $labels.reason }} ran on
                {{ $labels.instance }} in the last 10 minutes. Nothing is wrong
                with the clock; this records that subscribers were tested.
              |||,
            },
          },
          {
            alert: 'ClockwatchChronyRuntimeStepsAllowed',
            expr: 'clockwatch_chrony_config_runtime_step_allowed{%(clockwatchSelector)s} == 1' % c,
            'for': '1h',
            labels: { severity: 'info' },
            annotations: {
              summary: 'chronyd may step the clock at any time.',
              description: |||
                chrony.conf on {{ $labels.instance }} has makestep with a negative
                limit: chronyd steps the clock whenever the offset exceeds the
                threshold, not only at boot. Backward steps then happen in service.
              |||,
            },
          },
        ]),
      },
    ],
  },
}
