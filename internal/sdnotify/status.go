package sdnotify

import (
	"context"
	"errors"
	"log/slog"
	"time"
)

// Statuser sets the status line. *Notifier is the real one.
type Statuser interface {
	Status(status string) error
}

var _ Statuser = (*Notifier)(nil)

// StatusReporter is the task that keeps the status line `systemctl status`
// shows up to date: it asks Status for the current line (for clockwatch, the
// health verdict's summary) every Interval and sends it when it changed, so
// that an unchanged verdict costs no datagram.
type StatusReporter struct {
	// Statuser sends the line; normally the daemon's *Notifier.
	Statuser Statuser
	// Interval is how often Status is asked. It must be positive.
	Interval time.Duration
	// Status returns the current status line.
	Status func() string
	// Logger receives one error line when sending starts failing. Nil
	// discards.
	Logger *slog.Logger
	// Beat, when set, times the asks instead of a ticker every Interval
	// (each receive, after the first line at once): the daemon's pulse,
	// so that they share its wake-ups.
	Beat <-chan struct{}
}

// Run reports until ctx is done, then returns nil. The first line goes out
// at once.
func (r *StatusReporter) Run(ctx context.Context) error {
	if r.Statuser == nil || r.Status == nil || r.Interval <= 0 {
		return errors.New("sdnotify: StatusReporter needs a Statuser, a Status func and a positive Interval")
	}
	log := r.Logger
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	var tick <-chan time.Time
	if r.Beat == nil {
		t := time.NewTicker(r.Interval)
		defer t.Stop()
		tick = t.C
	}
	var last string
	sent, failing := false, false
	for {
		if s := r.Status(); !sent || s != last {
			if err := r.Statuser.Status(s); err != nil {
				if !failing {
					log.Error("sending the status line to systemd failed", "err", err)
				}
				failing = true
			} else {
				last, sent, failing = s, true, false
			}
		}
		select {
		case <-ctx.Done():
			return nil
		case <-tick:
		case <-r.Beat:
		}
	}
}
