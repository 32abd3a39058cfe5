package daemon

import (
	"context"
	"os"
	"os/signal"
	"strings"
	"syscall"
	"time"

	"github.com/clockwatch/clockwatch/internal/config"
)

// reloadOnHUP reloads the configuration on SIGHUP. A file that does not
// load or validate is refused: the running configuration stays.
func (d *Daemon) reloadOnHUP(ctx context.Context) error {
	hup := make(chan os.Signal, 1)
	signal.Notify(hup, syscall.SIGHUP)
	defer signal.Stop(hup)
	for {
		select {
		case <-ctx.Done():
			return nil
		case <-hup:
			if err := d.opts.Notifier.Reloading(); err != nil {
				d.logger.Warn("notifying systemd", "err", err)
			}
			d.Reload()
			if err := d.opts.Notifier.Ready(d.verdict(d.sources).Summary()); err != nil {
				d.logger.Warn("notifying systemd", "err", err)
			}
		}
	}
}

// Reload loads the configuration file again and swaps it in if it is valid.
func (d *Daemon) Reload() bool {
	cfg, err := config.Load(d.opts.ConfigFile)
	if err == nil {
		cfg, err = d.opts.ApplyFlags(cfg)
	}
	if err != nil {
		d.reloads.Record(false, time.Now())
		d.logger.Error("configuration reload refused; keeping the running configuration", "err", err)
		return false
	}
	if d.stepdown != nil {
		sd := cfg.Stepdown.Resolve(d.opts.Env.Getenv) // as at the start, or every reload would look like a socket change
		if _, err := d.stepdown.Reload(sd); err != nil {
			d.reloads.Record(false, time.Now())
			d.logger.Error("configuration reload refused; keeping the running configuration", "err", err)
			return false
		}
	}
	if d.announcer != nil {
		d.announcer.SetConfig(cfg.Stepdown.Policy)
	}
	var later []string
	for _, key := range config.Changed(d.started, cfg) {
		if !config.Reloadable(key) {
			later = append(later, key)
		}
	}
	if len(later) > 0 {
		d.logger.Warn("configuration reloaded, but these settings take effect only at the next restart",
			"settings", strings.Join(later, ", "), "file", d.opts.ConfigFile)
	}
	d.cfg.Store(cfg)
	d.reloads.Record(true, time.Now())
	d.logger.Info("configuration reloaded", "file", d.opts.ConfigFile)
	return true
}
