package sdnotify

import (
	"context"
	"errors"
	"log/slog"
	"time"
)

// Pinger sends one watchdog keep-alive. *Notifier is the real one.
type Pinger interface {
	Watchdog() error
}

var _ Pinger = (*Notifier)(nil)

// Watchdog is the task that keeps systemd's watchdog fed while the daemon is
// healthy. It is a separate task, not a timer inside another one, so that a
// stuck loop elsewhere shows up through Healthy rather than being hidden by a
// ping that still fires.
type Watchdog struct {
	// Pinger sends the pings; normally the daemon's *Notifier.
	Pinger Pinger
	// Interval is the watchdog timeout systemd enforces (WatchdogInterval).
	// Pings go out at half of it. Zero turns the watchdog off.
	Interval time.Duration
	// Healthy says whether the daemon is doing its work (for example: the
	// sampler has taken a sample recently). A non-nil error skips the ping,
	// and systemd restarts the service when the interval runs out. A nil
	// Healthy counts as always healthy.
	Healthy func() error
	// Logger receives a warning when pings stop and an info line when they
	// resume, never one per tick. Nil discards.
	Logger *slog.Logger
	// Beat, when set, times the pings instead of a ticker of the
	// Watchdog's own (each receive, after the first ping at once): the
	// daemon's pulse, every half Interval or sooner, so that the pings
	// share its wake-ups. A pulse that stops stops the pings.
	Beat <-chan struct{}
}

// Run pings until ctx is done, then returns nil. It returns nil at once when
// the watchdog is off (Interval is zero). A failed send is logged and retried
// on the next tick: it does not stop the daemon.
func (w *Watchdog) Run(ctx context.Context) error {
	if w.Interval <= 0 {
		return nil
	}
	if w.Pinger == nil {
		return errors.New("sdnotify: Watchdog has no Pinger")
	}
	log := w.Logger
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	var tick <-chan time.Time
	if w.Beat == nil {
		t := time.NewTicker(w.Interval / 2)
		defer t.Stop()
		tick = t.C
	}
	var unhealthy, sendFailing bool
	for {
		if err := w.healthy(); err != nil {
			if !unhealthy {
				log.Warn("not pinging the systemd watchdog: the daemon is unhealthy; systemd restarts it unless it recovers", "err", err, "watchdog_timeout", w.Interval)
			}
			unhealthy = true
		} else {
			if unhealthy {
				log.Info("daemon healthy again, pinging the systemd watchdog")
			}
			unhealthy = false
			if err := w.Pinger.Watchdog(); err != nil {
				if !sendFailing {
					log.Error("pinging the systemd watchdog failed", "err", err)
				}
				sendFailing = true
			} else {
				sendFailing = false
			}
		}
		select {
		case <-ctx.Done():
			return nil
		case <-tick:
		case <-w.Beat:
		}
	}
}

func (w *Watchdog) healthy() error {
	if w.Healthy == nil {
		return nil
	}
	return w.Healthy()
}
