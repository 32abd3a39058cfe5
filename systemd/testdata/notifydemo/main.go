// Command notifydemo is wired to systemd the way clockwatch's daemon is:
// READY=1 with a STATUS line once its tasks have started, the watchdog task
// pinging while healthy, STATUS when the verdict changes, RELOADING=1 and
// READY=1 around a SIGHUP reload, STOPPING=1 on SIGTERM. The systemd package's
// tests run it against a fake $NOTIFY_SOCKET until the daemon itself does all
// of this.
package main

import (
	"context"
	"fmt"
	"log/slog"
	"os"
	"os/signal"
	"sync"
	"syscall"

	"github.com/clockwatch/clockwatch/internal/sdnotify"
)

func main() { os.Exit(run()) }

func run() int {
	log := slog.New(slog.NewTextHandler(os.Stderr, nil))
	notifier, err := sdnotify.FromEnv(os.Getenv)
	if err != nil {
		log.Error("systemd notification socket unusable", "err", err)
		return 1
	}
	interval, err := sdnotify.WatchdogInterval(os.Getenv, os.Getpid())
	if err != nil {
		log.Error("systemd watchdog settings unusable", "err", err)
		return 1
	}
	ctx, stop := signal.NotifyContext(context.Background(), syscall.SIGTERM, os.Interrupt)
	defer stop()
	hup := make(chan os.Signal, 1)
	signal.Notify(hup, syscall.SIGHUP)

	// The daemon runs its tasks under errgroup; a WaitGroup keeps this
	// program's imports to what go.mod already has (tidy skips testdata).
	var wg sync.WaitGroup
	errs := make(chan error, 1)
	wg.Go(func() {
		errs <- (&sdnotify.Watchdog{Pinger: notifier, Interval: interval, Healthy: func() error { return nil }, Logger: log}).Run(ctx)
	})
	wg.Go(func() {
		for {
			select {
			case <-ctx.Done():
				return
			case <-hup:
				if err := notifier.Reloading(); err != nil {
					log.Warn("notifying systemd", "err", err)
				}
				if err := notifier.Ready("OK: configuration reloaded"); err != nil {
					log.Warn("notifying systemd", "err", err)
				}
			}
		}
	})
	if err := notifier.Ready("OK: 0 steps, offset 0s"); err != nil {
		log.Warn("notifying systemd", "err", err)
	}
	<-ctx.Done()
	if err := notifier.Stopping(); err != nil {
		log.Warn("notifying systemd", "err", err)
	}
	wg.Wait()
	if err := <-errs; err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	return 0
}
