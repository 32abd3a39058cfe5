package daemon

import (
	"context"
	"log/slog"
	"time"

	"github.com/clockwatch/clockwatch/internal/health"
	"github.com/clockwatch/clockwatch/internal/probe"
	"github.com/clockwatch/clockwatch/internal/stepdown/server"
	"github.com/clockwatch/clockwatch/internal/timesources"
)

// firstAnswerWait bounds how long the start waits for the time daemons'
// first answer before it judges whether anybody disciplines the clock.
const firstAnswerWait = 30 * time.Second

// daemonsAnswered tells, from the enabled time sources, whether each has
// given its first answer or failed (decided) and whether any answered.
func daemonsAnswered(s *timesources.Sources) (decided, answered bool) {
	decided = true
	if s.Chrony != nil {
		st := s.Chrony.Status()
		answered = answered || st.Valid
		decided = decided && (st.Valid || st.Err != nil)
	}
	if s.Ntpd != nil {
		snap := s.Ntpd.Snapshot()
		answered = answered || snap.HaveData
		decided = decided && (snap.HaveData || snap.Err != nil)
	}
	return decided, answered
}

// warnIfUndisciplined logs one WARN at start on a host nobody disciplines
// (no time daemon answers, the kernel says unsynchronised): the stepdown
// socket will stay in stepdown for good, which is the safe default but
// surprises whoever runs clockwatch in a VM or container without a time
// daemon. The line names the triggers and the keys that turn them off.
func warnIfUndisciplined(ctx context.Context, sources *timesources.Sources, timex probe.TimexReader, sd server.Config, logger *slog.Logger) error {
	warning := health.UndisciplinedWarning(sd)
	if warning == "" {
		return nil
	}
	t := time.NewTicker(100 * time.Millisecond)
	defer t.Stop()
	deadline := time.Now().Add(firstAnswerWait)
	for {
		decided, answered := daemonsAnswered(sources)
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
		return nil // the kernel probe reports that itself
	}
	if tx := probe.Decode(raw); health.NobodyDisciplines(false, &tx) {
		logger.Warn(warning, "max_error", tx.MaxError, "kernel_state", tx.State)
	}
	return nil
}
