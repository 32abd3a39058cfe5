package daemon

import (
	"context"
	"fmt"
	"time"

	"github.com/clockwatch/clockwatch/internal/pulse"
	"github.com/clockwatch/clockwatch/internal/sdnotify"
)

// systemdTasks tell systemd the daemon is ready (every task has started and
// the sampler has its first sample), keep its status line on the current
// verdict, ping its watchdog while the clock sampler keeps sampling, and
// say when the daemon stops. With no NOTIFY_SOCKET they do nothing.
func (d *Daemon) systemdTasks(steps *Steps, beats systemdBeats) []func(context.Context) error {
	n := d.opts.Notifier
	status := func() string { return d.verdict(d.sources).Summary() }
	if err := n.Ready(status()); err != nil {
		d.logger.Warn("notifying systemd", "err", err)
	}
	last, changed := steps.Sampler.Gauges().Load().Samples, time.Now()
	wd := &sdnotify.Watchdog{Pinger: n, Interval: d.opts.WatchdogInterval, Logger: d.logger, Beat: beats.watchdog, Healthy: func() error {
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
		sr := &sdnotify.StatusReporter{Statuser: n, Interval: statusInterval, Status: status, Logger: d.logger, Beat: beats.status}
		tasks = append(tasks, sr.Run)
	}
	return tasks
}

// statusInterval is how often systemd's status line is looked at.
const statusInterval = 10 * time.Second

// systemdBeats time the watchdog's pings (every half its interval) and the
// status line on the daemon's pulse; nil: a ticker of their own.
type systemdBeats struct {
	watchdog, status <-chan struct{}
}

// beatOn returns a channel that receives every period of pl, or up to half
// of it sooner on a wake-up of pl's other work (a beat not yet taken is not
// doubled).
func beatOn(pl *pulse.Pulse, period time.Duration) <-chan struct{} {
	c := make(chan struct{}, 1)
	pl.Every(period, func() {
		select {
		case c <- struct{}{}:
		default:
		}
	})
	return c
}
