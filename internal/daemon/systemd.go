package daemon

import (
	"context"
	"fmt"
	"time"

	"github.com/clockwatch/clockwatch/internal/sdnotify"
)

// systemdTasks tell systemd the daemon is ready (every task has started and
// the sampler has its first sample), keep its status line on the current
// verdict, ping its watchdog while the clock sampler keeps sampling, and
// say when the daemon stops. With no NOTIFY_SOCKET they do nothing.
func (d *Daemon) systemdTasks(steps *Steps) []func(context.Context) error {
	n := d.opts.Notifier
	status := func() string { return d.verdict(d.sources).Summary() }
	if err := n.Ready(status()); err != nil {
		d.logger.Warn("notifying systemd", "err", err)
	}
	last, changed := steps.Sampler.Gauges().Load().Samples, time.Now()
	wd := &sdnotify.Watchdog{Pinger: n, Interval: d.opts.WatchdogInterval, Logger: d.logger, Healthy: func() error {
		if s := steps.Sampler.Gauges().Load().Samples; s != last {
			last, changed = s, time.Now()
			return nil
		}
		if stuck := time.Since(changed); stuck > d.opts.WatchdogInterval/2 {
			return fmt.Errorf("the clock sampler has taken no sample for %s", stuck.Round(time.Millisecond))
		}
		return nil
	}}
	tasks := []func(context.Context) error{
		wd.Run,
		func(ctx context.Context) error {
			<-ctx.Done()
			if err := n.Stopping(); err != nil {
				d.logger.Warn("notifying systemd", "err", err)
			}
			return nil
		},
	}
	if n.Enabled() {
		sr := &sdnotify.StatusReporter{Statuser: n, Interval: 10 * time.Second, Status: status, Logger: d.logger}
		tasks = append(tasks, sr.Run)
	}
	return tasks
}
