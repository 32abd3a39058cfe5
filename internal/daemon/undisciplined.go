package daemon

import (
	"context"
	"log/slog"
	"time"

	"github.com/clockwatch/clockwatch/internal/config"
	"github.com/clockwatch/clockwatch/internal/health"
	"github.com/clockwatch/clockwatch/internal/hostclock"
	"github.com/clockwatch/clockwatch/internal/kernel"
	"github.com/clockwatch/clockwatch/internal/timesources"
)

// firstAnswerWait bounds how long the start waits for the time daemons'
// first answer before it judges whether anybody disciplines the clock.
const firstAnswerWait = 30 * time.Second

// warnIfUndisciplined logs one WARN at start on a host nobody disciplines
// (no time daemon answers, the kernel says unsynchronised): the stepdown
// socket will stay in stepdown for good, which is the safe default but
// surprises whoever runs clockwatch in a VM or container without a time
// daemon. It decides from the readings of the sources that discipline the
// clock (timesources.Traits.Disciplines), as `clockwatch status` does. The
// line names the triggers and the keys that turn them off.
func warnIfUndisciplined(ctx context.Context, sources timesources.Members, timex hostclock.TimexReader, sd config.Stepdown, logger *slog.Logger) error {
	warning := health.UndisciplinedWarning(sd.Enabled, sd.Policy.Triggers)
	if warning == "" {
		return nil
	}
	t := time.NewTicker(100 * time.Millisecond)
	defer t.Stop()
	deadline := time.Now().Add(firstAnswerWait)
	for {
		decided, answered := sources.Disciplining()
		if answered {
			return nil
		}
		if decided || time.Now().After(deadline) {
			break
		}
		select {
		case <-ctx.Done():
			return nil
		case <-t.C:
		}
	}
	raw, err := timex.ReadTimex()
	if err != nil {
		return nil // the kernel source reports that itself
	}
	if tx := kernel.Decode(raw); health.NobodyDisciplines(false, &tx) {
		logger.Warn(warning, "max_error", tx.MaxError, "kernel_state", tx.State)
	}
	return nil
}
